/* Flame graphs: a static SVG, or a self-contained HTML page (zoom on click,
 * search) that draws the same tree in the browser without network. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/symbolize.h"
#include "cli/util.h"

/* One frame of the merged call tree, in depth-first order.  Depth 0 is the
 * synthetic root "all". */
struct flame_node {
	uint32_t name; /* name id, UINT32_MAX for the root */
	uint32_t depth;
	int64_t start; /* offset from the left edge, in value units */
	int64_t value;
};

struct flame_tree {
	struct flame_node *nodes;
	size_t n, cap;
	uint32_t max_depth;
};

/* Builds the tree from stacks sorted by name: consecutive stacks share
 * their common prefix.  Stacks with values <= 0 cannot be drawn and are
 * left out. */
static void flame_build(const struct stack_set *s, struct flame_tree *t)
{
	memset(t, 0, sizeof(*t));
	size_t *order = stacks_sorted(s);
	size_t path_cap = 0;
	size_t *path = NULL; /* node index at each depth of the current path */
	uint32_t *path_names = NULL;
	size_t names_cap = 0, path_len = 0;
	t->nodes = xgrow(t->nodes, &t->cap, 1, sizeof(*t->nodes));
	t->nodes[t->n++] = (struct flame_node){.name = UINT32_MAX};
	int64_t offset = 0;
	for (size_t i = 0; i < s->n_stacks; i++) {
		const struct stack *st = &s->stacks[order[i]];
		if (st->value <= 0)
			continue;
		const uint32_t *f = s->frames + st->offset;
		size_t common = 0;
		while (common < path_len && common < st->depth && path_names[common] == f[common])
			common++;
		path = xgrow(path, &path_cap, st->depth, sizeof(*path));
		path_names = xgrow(path_names, &names_cap, st->depth, sizeof(*path_names));
		for (size_t d = common; d < st->depth; d++) {
			t->nodes = xgrow(t->nodes, &t->cap, t->n + 1, sizeof(*t->nodes));
			t->nodes[t->n] = (struct flame_node){.name = f[d], .depth = (uint32_t)d + 1, .start = offset};
			path[d] = t->n++;
			path_names[d] = f[d];
		}
		path_len = st->depth;
		if (st->depth > t->max_depth)
			t->max_depth = st->depth;
		t->nodes[0].value += st->value;
		for (size_t d = 0; d < st->depth; d++)
			t->nodes[path[d]].value += st->value;
		offset += st->value;
	}
	free(order);
	free(path);
	free(path_names);
}

static const char *node_name(const struct stack_set *s, const struct flame_node *n)
{
	return n->name == UINT32_MAX ? "all" : s->names.names[n->name];
}

static void append_xml_escaped(struct cli_buf *out, const char *s, size_t max_chars)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p && n < max_chars; p++, n++) {
		switch (*p) {
		case '<':
			buf_append(out, "&lt;", 4);
			break;
		case '>':
			buf_append(out, "&gt;", 4);
			break;
		case '&':
			buf_append(out, "&amp;", 5);
			break;
		case '"':
			buf_append(out, "&quot;", 6);
			break;
		default:
			if (*p < 0x20)
				buf_append(out, " ", 1);
			else
				buf_append(out, p, 1);
		}
	}
}

/* Warm colours from a hash of the name: the same function always gets the
 * same colour, neighbours differ. */
static void frame_colour(const char *name, unsigned *r, unsigned *g, unsigned *b)
{
	uint64_t h = hash_bytes(name, strlen(name), 0);
	*r = 200 + (unsigned)(h % 55);
	*g = 80 + (unsigned)((h >> 8) % 150);
	*b = (unsigned)((h >> 16) % 60);
}

#define SVG_WIDTH 1200
#define SVG_PAD 10
#define FRAME_HEIGHT 16
#define SVG_TOP 34
#define CHAR_WIDTH 6.5

static void write_svg(const struct selection *sel, const struct flame_tree *t, const char *title,
		      struct cli_buf *out)
{
	double inner = SVG_WIDTH - 2 * SVG_PAD;
	unsigned height = SVG_TOP + (t->max_depth + 1) * FRAME_HEIGHT + SVG_PAD;
	double total = t->nodes[0].value > 0 ? (double)t->nodes[0].value : 1.0;
	buf_printf(out,
		   "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		   "<svg version=\"1.1\" width=\"%d\" height=\"%u\" viewBox=\"0 0 %d %u\" "
		   "xmlns=\"http://www.w3.org/2000/svg\">\n"
		   "<style>text{font-family:monospace;font-size:11px;fill:#000}"
		   "rect:hover{stroke:#000;stroke-width:0.5}</style>\n"
		   "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
		   "<text x=\"%d\" y=\"20\" style=\"font-size:15px\">",
		   SVG_WIDTH, height, SVG_WIDTH, height, SVG_PAD);
	append_xml_escaped(out, title, 200);
	char tot[32];
	format_value(tot, sizeof(tot), t->nodes[0].value, sel->unit, 0);
	buf_printf(out, " (%s, %s, total %s)</text>\n", sel->type, sel->unit, tot);
	for (size_t i = 0; i < t->n; i++) {
		const struct flame_node *n = &t->nodes[i];
		double x = SVG_PAD + (double)n->start / total * inner;
		double w = (double)n->value / total * inner;
		if (w < 0.1)
			continue;
		unsigned y = SVG_TOP + (t->max_depth - n->depth) * FRAME_HEIGHT;
		const char *name = node_name(&sel->stacks, n);
		unsigned r, g, b;
		frame_colour(name, &r, &g, &b);
		char val[32];
		format_value(val, sizeof(val), n->value, sel->unit, 0);
		buf_printf(out, "<g><title>");
		append_xml_escaped(out, name, 4096);
		buf_printf(out, " (%s, %.2f%%)</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\" "
				"fill=\"rgb(%u,%u,%u)\" rx=\"1\"/>",
			   val, 100.0 * (double)n->value / total, x, y, w, FRAME_HEIGHT - 1, r, g, b);
		size_t fits = (size_t)((w - 4) / CHAR_WIDTH);
		if (fits >= 3) {
			buf_printf(out, "<text x=\"%.2f\" y=\"%u\">", x + 2, y + FRAME_HEIGHT - 4);
			size_t len = strlen(name);
			append_xml_escaped(out, name, len <= fits ? len : fits - 2);
			if (len > fits)
				buf_append(out, "..", 2);
			buf_append(out, "</text>", 7);
		}
		buf_append(out, "</g>\n", 5);
	}
	buf_append(out, "</svg>\n", 7);
}

/* JSON string contents, safe inside a <script> element. */
static void append_json_string(struct cli_buf *out, const char *s)
{
	buf_append(out, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			buf_printf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
			buf_printf(out, "\\u%04x", *p);
		else
			buf_append(out, p, 1);
	}
	buf_append(out, "\"", 1);
}

/* The page: data as JSON, rendering as absolutely placed <div>s. */
static const char html_head[] =
	"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<meta name=\"viewport\" content=\"width=device-width\">\n<title>";

static const char html_style[] =
	"</title>\n<style>\n"
	"body{margin:0;font:12px monospace;background:#f8f8f0;color:#000}\n"
	"#bar{display:flex;gap:8px;align-items:center;padding:6px 10px;background:#eee;border-bottom:1px solid #ccc}\n"
	"#bar h1{font-size:14px;margin:0;flex:1;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}\n"
	"#search{width:220px}\n"
	"#details{padding:4px 10px;height:16px;white-space:nowrap;overflow:hidden}\n"
	"#flame{position:relative;margin:0 10px}\n"
	".f{position:absolute;height:17px;line-height:17px;overflow:hidden;white-space:nowrap;"
	"box-sizing:border-box;border-right:1px solid #f8f8f0;padding-left:2px;cursor:pointer;font-size:11px}\n"
	".f:hover{outline:1px solid #000}\n"
	".f.anc{opacity:0.55}\n"
	".f.hl{background:#e040fb !important}\n"
	"</style></head><body>\n"
	"<div id=\"bar\"><h1 id=\"title\"></h1>"
	"<input id=\"search\" type=\"search\" placeholder=\"search (regex)\" aria-label=\"search\">"
	"<span id=\"matched\"></span><button id=\"reset\">reset zoom</button></div>\n"
	"<div id=\"details\">&nbsp;</div>\n<div id=\"flame\"></div>\n<script>\nconst D=";

static const char html_script[] =
	";\n"
	"(function(){\n"
	"'use strict';\n"
	"const N=D.nodes.length/4, H=18, el=document.getElementById('flame');\n"
	"const name=i=>i===0?'all':D.names[D.nodes[4*i]], depth=i=>D.nodes[4*i+1],\n"
	"  start=i=>D.nodes[4*i+2], value=i=>D.nodes[4*i+3];\n"
	"let zoomed=0, re=null;\n"
	"document.getElementById('title').textContent=D.title;\n"
	"function colour(s){let h=2166136261;for(let k=0;k<s.length;k++){h^=s.charCodeAt(k);"
	"h=Math.imul(h,16777619)>>>0;}\n"
	"  return 'rgb('+(200+h%55)+','+(80+(h>>>8)%150)+','+((h>>>16)%60)+')';}\n"
	"function fmt(v){const u=D.unit;\n"
	"  if(u==='nanoseconds'){if(v>=1e9)return (v/1e9).toFixed(2)+'s';if(v>=1e6)return (v/1e6).toFixed(2)+'ms';"
	"if(v>=1e3)return (v/1e3).toFixed(2)+'us';return v+'ns';}\n"
	"  if(u==='bytes'){if(v>=1073741824)return (v/1073741824).toFixed(2)+'GiB';if(v>=1048576)return "
	"(v/1048576).toFixed(2)+'MiB';if(v>=1024)return (v/1024).toFixed(2)+'KiB';return v+'B';}\n"
	"  return String(v);}\n"
	"function pct(v){return (100*v/value(0)).toFixed(2)+'%';}\n"
	"function render(){\n"
	"  el.textContent='';\n"
	"  const W=el.clientWidth, z=zoomed, zs=start(z), zv=value(z)||1, zd=depth(z);\n"
	"  el.style.height=((D.maxDepth+1)*H)+'px';\n"
	"  const frag=document.createDocumentFragment();\n"
	"  for(let i=0;i<N;i++){\n"
	"    const s=start(i), v=value(i), d=depth(i);\n"
	"    let x, w, anc=false;\n"
	"    if(d<zd){ if(s<=zs && s+v>=zs+zv){x=0;w=W;anc=true;} else continue; }\n"
	"    else { if(s<zs || s+v>zs+zv) continue; x=(s-zs)/zv*W; w=v/zv*W; }\n"
	"    if(w<0.5) continue;\n"
	"    const n=name(i), div=document.createElement('div');\n"
	"    div.className='f'+(anc?' anc':'')+(re&&re.test(n)?' hl':'');\n"
	"    div.style.left=x+'px'; div.style.width=w+'px'; div.style.top=((D.maxDepth-d)*H)+'px';\n"
	"    div.style.background=colour(n); div.dataset.i=i;\n"
	"    if(w>24) div.textContent=n;\n"
	"    div.title=n+' ('+fmt(v)+', '+pct(v)+')';\n"
	"    frag.appendChild(div);\n"
	"  }\n"
	"  el.appendChild(frag);\n"
	"}\n"
	"function search(text){\n"
	"  re=null;\n"
	"  if(text){try{re=new RegExp(text);}catch(e){re=new RegExp(text.replace(/[.*+?^${}()|[\\]\\\\]/g,'\\\\$&'));}}\n"
	"  let matched=0; const open=[];\n"
	"  if(re){for(let i=1;i<N;i++){const d=depth(i); open.length=d;\n"
	"    const inside=open.some(Boolean), hit=re.test(name(i)); open[d]=inside||hit;\n"
	"    if(hit&&!inside) matched+=value(i);}}\n"
	"  document.getElementById('matched').textContent=re?('matched '+pct(matched)):'';\n"
	"  render();\n"
	"}\n"
	"el.addEventListener('click',ev=>{const t=ev.target.closest('.f'); if(!t) return;\n"
	"  zoomed=Number(t.dataset.i); render();});\n"
	"el.addEventListener('mouseover',ev=>{const t=ev.target.closest('.f'); if(!t) return;\n"
	"  const i=Number(t.dataset.i); document.getElementById('details').textContent=\n"
	"  name(i)+': '+fmt(value(i))+' ('+pct(value(i))+' of '+D.type+')';});\n"
	"document.getElementById('search').addEventListener('input',ev=>search(ev.target.value));\n"
	"document.getElementById('reset').addEventListener('click',()=>{zoomed=0;render();});\n"
	"window.addEventListener('resize',render);\n"
	"render();\n"
	"})();\n"
	"</script>\n</body></html>\n";

static void write_html(const struct selection *sel, const struct flame_tree *t, const char *title,
		       struct cli_buf *out)
{
	buf_append(out, html_head, sizeof(html_head) - 1);
	append_xml_escaped(out, title, 200);
	buf_append(out, html_style, sizeof(html_style) - 1);
	buf_append(out, "{\"title\":", 9);
	char full_title[512];
	snprintf(full_title, sizeof(full_title), "%s (%s, %s)", title, sel->type, sel->unit);
	append_json_string(out, full_title);
	buf_append(out, ",\"type\":", 8);
	append_json_string(out, sel->type);
	buf_append(out, ",\"unit\":", 8);
	append_json_string(out, sel->unit);
	buf_printf(out, ",\"maxDepth\":%u,\"names\":[", t->max_depth);
	for (size_t i = 0; i < sel->stacks.names.n; i++) {
		if (i)
			buf_append(out, ",", 1);
		append_json_string(out, sel->stacks.names.names[i]);
	}
	buf_append(out, "],\"nodes\":[", 11);
	for (size_t i = 0; i < t->n; i++) {
		const struct flame_node *n = &t->nodes[i];
		buf_printf(out, "%s%u,%u,%lld,%lld", i ? "," : "", n->name == UINT32_MAX ? 0 : n->name, n->depth,
			   (long long)n->start, (long long)n->value);
		if (i % 16 == 15)
			buf_append(out, "\n", 1);
	}
	buf_append(out, "]}", 2);
	buf_append(out, html_script, sizeof(html_script) - 1);
}

int cmd_flame(int argc, char **argv)
{
	struct cli_opts o;
	struct input_set set = {0};
	struct selection sel = {0};
	int rc = parse_opts(argc, argv, OPT_FILTERS | OPT_OUTPUT, &o);
	if (rc == 0 && o.n_paths == 0)
		rc = cli_fail("flame needs at least one profile file or directory");
	if (rc == 0 && !o.output)
		rc = cli_fail("flame needs -o OUT.svg (or -o OUT.html with --html; -o - for standard output)");
	if (rc == 0)
		rc = inputs_load(&set, o.paths, o.n_paths);
	if (rc == 0)
		inputs_symbolize(&set, o.filters.debug_dirs, o.filters.n_debug_dirs);
	if (rc == 0)
		rc = select_single(&set, &o.filters, &sel);
	struct cli_buf out = {0};
	if (rc == 0) {
		struct flame_tree t;
		flame_build(&sel.stacks, &t);
		const char *title = o.title ? o.title : "stowaway flame graph";
		if (o.html)
			write_html(&sel, &t, title, &out);
		else
			write_svg(&sel, &t, title, &out);
		free(t.nodes);
		if (strcmp(o.output, "-") == 0)
			rc = fwrite(out.data, 1, out.len, stdout) == out.len && fflush(stdout) == 0
				     ? 0
				     : cli_fail("writing to standard output failed");
		else
			rc = write_file_atomic(o.output, out.data, out.len, 0644);
	}
	buf_free(&out);
	selection_free(&sel);
	inputs_free(&set);
	free_opts(&o);
	if (rc != 0) {
		fprintf(stderr, "stowaway: %s\n", cli_err);
		return 1;
	}
	return 0;
}
