/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * plot.c - --plot=FILE.svg: two bar charts side by side, client CPU per
 * I/O (median bar, min-max whisker) on a linear axis and the latency
 * percentiles p50/p99/p99.9 (all blocks merged) on a log axis, one group
 * per variant.  Plain SVG written with stdio: no library, opens anywhere.
 *
 * Threading: parent only, after summarize().
 *
 * Ownership: reads struct parent; the file is created or truncated at
 * path and closed before returning.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>

/* the canvas and the two plot areas, in SVG user units */
#define SVG_W 1000.0
#define SVG_H 490.0
#define TOP 70.0
#define BOT 380.0
#define LX0 70.0
#define LX1 470.0
#define RX0 560.0
#define RX1 970.0

static const char *const be_color[BE_COUNT] = {
	"#2e7d32", "#c62828", "#1565c0"
};
static const char *const pct_color[3] = { "#90caf9", "#1e88e5", "#0d47a1" };

static void svg_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
	}
}

static void svg_line(FILE *f, double x1, double y1, double x2, double y2,
		     const char *stroke)
{
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		"stroke=\"%s\"/>\n", x1, y1, x2, y2, stroke);
}

static double nice_step(double range, int ticks)
{
	double raw = range / ticks, mag = pow(10, floor(log10(raw)));
	double r = raw / mag;

	return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

/* 4211 -> "4.2k", 149422 -> "149k", 87.3 -> "87" */
static void compact(char *buf, size_t n, double v)
{
	if (v >= 99950)
		snprintf(buf, n, "%.0fk", v / 1000);
	else if (v >= 1000)
		snprintf(buf, n, "%.1fk", v / 1000);
	else if (v >= 10)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.1f", v);
}

/* backend name, "+jemalloc" on a second line */
static void svg_name(FILE *f, const struct variant *v, double x, double y)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
		x, y, be_name[v->backend]);
	if (v->jemalloc)
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
			"font-size=\"10\">+jemalloc</text>\n", x, y + 12);
}

/* the height of t on the linear axis 0..hi */
static double lin_y(double t, double hi)
{
	return BOT - (BOT - TOP) * t / hi;
}

/* the height of t on the log axis lo..hi */
static double log_y(double t, double lo, double hi)
{
	return BOT - (BOT - TOP) * log10(t / lo) / log10(hi / lo);
}

/* left: CPU per I/O, median bar with min-max whisker */
static void plot_cpu(FILE *f, const struct parent *P, double cmax)
{
	double step = nice_step(cmax * 1.1, 5);
	double hi = ceil(cmax * 1.1 / step) * step;
	char num[32];

	fprintf(f, "<text x=\"%.0f\" y=\"50\" text-anchor=\"middle\" font-weight=\"bold\">"
		"Client CPU per I/O (\xc2\xb5s, all threads; bar median, whisker min-max)</text>\n",
		(LX0 + LX1) / 2);
	for (double t = 0; t <= hi + step / 2; t += step) {
		double y = lin_y(t, hi);

		svg_line(f, LX0, y, LX1, y, "#ddd");
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
			LX0 - 6, y + 4, t);
	}
	svg_line(f, LX0, TOP, LX0, BOT, "black");
	for (int i = 0; i < P->nv; i++) {
		const struct variant *v = &P->v[i];
		double slot = (LX1 - LX0) / P->nv, bw = slot * 0.6;
		double x = LX0 + slot * i + (slot - bw) / 2, xc = x + bw / 2;
		double y = lin_y(isnan(v->cpu_med) ? 0 : v->cpu_med, hi);

		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			"fill=\"%s\" fill-opacity=\"%s\"/>\n", x, y, bw,
			BOT - y, be_color[v->backend],
			v->jemalloc ? "0.55" : "0.9");
		if (!isnan(v->cpu_med)) {
			double y0 = lin_y(v->cpu_min, hi);
			double y1 = lin_y(v->cpu_max, hi);

			svg_line(f, xc, y0, xc, y1, "black");
			svg_line(f, xc - 6, y0, xc + 6, y0, "black");
			svg_line(f, xc - 6, y1, xc + 6, y1, "black");
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.1f</text>\n",
				xc + bw / 4, y1 - 6, v->cpu_med);
		}
		svg_name(f, v, xc, BOT + 16);
		compact(num, sizeof(num), v->iops_med);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
			"font-size=\"10\" fill=\"#555\">%s IOPS</text>\n", xc,
			BOT + 40, num);
	}
}

/* right: latency percentiles, log scale over whole decades */
static void plot_latency(FILE *f, const struct parent *P, double lmin,
			 double lmax)
{
	static const char *const lbl[3] = { "p50", "p99", "p99.9" };
	double lo = pow(10, floor(log10(lmin)));
	double hi = pow(10, ceil(log10(lmax)));
	char num[32];

	if (hi <= lo)
		hi = lo * 10;
	fprintf(f, "<text x=\"%.0f\" y=\"50\" text-anchor=\"middle\" font-weight=\"bold\">"
		"Latency (\xc2\xb5s, log scale, all blocks merged)</text>\n",
		(RX0 + RX1) / 2);
	for (double d = lo; d <= hi * 1.001; d *= 10) {
		for (int m = 1; m < 10; m++) {
			double t = d * m, y;

			if (t > hi * 1.001)
				break;
			y = log_y(t, lo, hi);
			svg_line(f, RX0, y, RX1, y, m == 1 ? "#bbb" : "#eee");
			if (m == 1) {
				snprintf(num, sizeof(num),
					 t >= 1 ? "%.0f" : "%g", t);
				fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
					RX0 - 6, y + 4, num);
			}
		}
	}
	svg_line(f, RX0, TOP, RX0, BOT, "black");
	for (int i = 0; i < P->nv; i++) {
		const struct variant *v = &P->v[i];
		double slot = (RX1 - RX0) / P->nv, bw = slot * 0.8 / 3;
		double x0 = RX0 + slot * i + slot * 0.1;
		double vals[3] = { v->p50, v->p99, v->p999 };

		for (int k = 0; k < 3; k++) {
			double val = vals[k], y;

			if (!(val > 0))
				continue;
			y = log_y(val, lo, hi);
			if (y < TOP)
				y = TOP;
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
				"fill=\"%s\"/>\n", x0 + bw * k, y, bw - 2,
				BOT - y, pct_color[k]);
			compact(num, sizeof(num), val);
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
				"font-size=\"9\">%s</text>\n",
				x0 + bw * k + bw / 2 - 1, y - 3, num);
		}
		svg_name(f, v, RX0 + slot * i + slot / 2, BOT + 16);
	}
	for (int k = 0; k < 3; k++) {
		double x = RX0 + 20 + k * 90;

		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x, BOT + 48,
			pct_color[k], x + 16, BOT + 58, lbl[k]);
	}
}

int write_plot(struct parent *P, const char *path)
{
	const struct opts *o = P->o;
	FILE *f = fopen(path, "w");
	double cmax = 0, lmin = INFINITY, lmax = 0;
	char desc[96];

	if (!f)
		return -errno;
	for (int i = 0; i < P->nv; i++) {
		const struct variant *v = &P->v[i];

		if (!isnan(v->cpu_max) && v->cpu_max > cmax)
			cmax = v->cpu_max;
		if (v->p50 > 0 && v->p50 < lmin)
			lmin = v->p50;
		if (v->p999 > lmax)
			lmax = v->p999;
	}
	if (cmax <= 0)
		cmax = 1;
	if (!(lmin < INFINITY) || lmax <= 0) {
		lmin = 1;
		lmax = 10;
	}
	job_desc(o, desc, sizeof(desc));
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		SVG_W, SVG_H, SVG_W, SVG_H);
	fprintf(f, "<text x=\"%.0f\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">"
		PROG ": ", SVG_W / 2);
	svg_text(f, desc);
	fprintf(f, ", %d image(s), %d block(s) per backend</text>\n",
		o->nimages, o->blocks);
	plot_cpu(f, P, cmax);
	plot_latency(f, P, lmin, lmax);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#555\">"
		"CPU: getrusage(RUSAGE_SELF) user+sys over the measured window / completed I/Os. "
		"Each block runs in a fresh process.</text>\n", SVG_W / 2, SVG_H - 12);
	fprintf(f, "</svg>\n");
	if (fclose(f))
		return -errno;
	return 0;
}
