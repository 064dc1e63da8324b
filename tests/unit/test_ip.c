/* IP address literals (export/ip.c). */
#include <string.h>

#include "check.h"
#include "export/ip.h"

static void test_ipv4(void)
{
	uint8_t ip[4];
	CHECK(export_parse_ipv4("127.0.0.1", 9, ip) && ip[0] == 127 && ip[3] == 1);
	CHECK(export_parse_ipv4("255.255.255.255", 15, ip) && ip[2] == 255);
	CHECK(!export_parse_ipv4("256.0.0.1", 9, ip));
	CHECK(!export_parse_ipv4("1.2.3", 5, ip));
	CHECK(!export_parse_ipv4("1.2.3.4.5", 9, ip));
	CHECK(!export_parse_ipv4("01.2.3.4", 8, ip));
	CHECK(!export_parse_ipv4("1..3.4", 6, ip));
	CHECK(!export_parse_ipv4("1.2.3.4 ", 8, ip));
}

static void test_ipv6(void)
{
	uint8_t ip[16];
	static const uint8_t loop[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	CHECK(export_parse_ipv6("::1", 3, ip) && memcmp(ip, loop, 16) == 0);
	CHECK(export_parse_ipv6("::", 2, ip) && ip[0] == 0 && ip[15] == 0);
	CHECK(export_parse_ipv6("fe80::1:2", 9, ip) && ip[0] == 0xfe && ip[1] == 0x80 &&
	      ip[13] == 1 && ip[15] == 2);
	CHECK(export_parse_ipv6("1:2:3:4:5:6:7:8", 15, ip) && ip[1] == 1 && ip[15] == 8);
	CHECK(export_parse_ipv6("::ffff:192.0.2.1", 16, ip) && ip[10] == 0xff && ip[12] == 192 &&
	      ip[15] == 1);
	CHECK(export_parse_ipv6("1::", 3, ip) && ip[1] == 1 && ip[15] == 0);
	CHECK(!export_parse_ipv6("1:2:3:4:5:6:7:8:9", 17, ip));
	CHECK(!export_parse_ipv6("1::2::3", 7, ip));
	CHECK(!export_parse_ipv6(":1", 2, ip));
	CHECK(!export_parse_ipv6("1:", 2, ip));
	CHECK(!export_parse_ipv6("12345::", 7, ip));
	CHECK(!export_parse_ipv6("1:2:3:4:5:6:7:8::", 18, ip));
	CHECK(!export_parse_ipv6("g::", 3, ip));
}

int main(void)
{
	RUN(test_ipv4);
	RUN(test_ipv6);
	return CHECK_DONE();
}
