/* Code for maps_late: a leaf function with no relocations, so it runs
 * wherever its segments are mapped. */
unsigned long late_hot_loop(unsigned long n);
unsigned long late_hot_loop(unsigned long n)
{
	unsigned long h = n;
	for (unsigned long i = 0; i < n; i++)
		h = (h ^ i) * 0x100000001b3ul + (h >> 7);
	return h;
}
