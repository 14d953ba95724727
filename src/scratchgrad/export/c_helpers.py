"""The C99 functions a generated model calls, one per kind of layer, for float and for int8.

A generated file holds only the helpers its layers use (an unused ``static`` function would be a
warning under ``-Wall``). Tensors are flat row-major arrays of one sample: ``(C, H, W)`` for
images, with Conv1d's ``(C, L)`` seen as ``(C, 1, L)``. ``struct window`` says how a convolution
or a pooling window sweeps its input; the padding is implicit (positions outside the input are
skipped), so no padded copy is ever made.

The layers that sweep arrays are written once, as templates: ``$T`` is the element type, ``$ACC``
the accumulator's, ``$Q`` the name suffix, and ``$STORE``/``$AVERAGE`` turn an accumulator into
an element. The float flavour stores the float sum; the int8 flavour (``quantize.py``) sums
int8 products in int32 and requantizes them with integer arithmetic only.
"""

from string import Template

WINDOW = """\
/* How a convolution or pooling window sweeps a (c_in, h, w) input to a (c_out, oh, ow) output:
 * kernel kh x kw, stride sh x sw, zero padding ph x pw (top, left), dilation dh x dw. */
struct window {
    int c_in, h, w, c_out, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, groups;
};
"""

SWEEPS = {
    "linear": """\
/* nn.Linear on each of `rows` rows: y[r][o] = b[o] + sum_i w[o][i] * x[r][i]. */
static void linear$Q(const $T *x, $T *y, const $T *w, const $B *b,$REQUANT
                   int rows, int n_in, int n_out)
{
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < n_out; o++) {
            $ACC acc = b[o];
            for (int i = 0; i < n_in; i++)
                acc += w[o * n_in + i] * x[r * n_in + i];
            y[r * n_out + o] = $STORE;
        }
}
""",
    "conv2d": """\
/* nn.Conv2d (and Conv1d): each output channel o sees c_in / groups input channels. */
static void conv2d$Q(const $T *x, $T *y, const $T *w, const $B *b,$REQUANT
                   const struct window *g)
{
    int group_in = g->c_in / g->groups, group_out = g->c_out / g->groups;
    for (int o = 0; o < g->c_out; o++) {
        const $T *x_group = x + (o / group_out) * group_in * g->h * g->w;
        for (int oy = 0; oy < g->oh; oy++)
            for (int ox = 0; ox < g->ow; ox++) {
                $ACC acc = b[o];
                for (int ci = 0; ci < group_in; ci++)
                    for (int ky = 0; ky < g->kh; ky++) {
                        int iy = oy * g->sh - g->ph + ky * g->dh;
                        if (iy < 0 || iy >= g->h)
                            continue; /* zero padding adds nothing */
                        for (int kx = 0; kx < g->kw; kx++) {
                            int ix = ox * g->sw - g->pw + kx * g->dw;
                            if (ix < 0 || ix >= g->w)
                                continue;
                            acc += w[((o * group_in + ci) * g->kh + ky) * g->kw + kx]
                                 * x_group[(ci * g->h + iy) * g->w + ix];
                        }
                    }
                y[(o * g->oh + oy) * g->ow + ox] = $STORE;
            }
    }
}
""",
    "max_pool2d": """\
/* nn.MaxPool2d: padding counts as -infinity, so it is simply skipped. */
static void max_pool2d$Q(const $T *x, $T *y, const struct window *g)
{
    for (int c = 0; c < g->c_in; c++)
        for (int oy = 0; oy < g->oh; oy++)
            for (int ox = 0; ox < g->ow; ox++) {
                $T best = $LOWEST;
                for (int ky = 0; ky < g->kh; ky++) {
                    int iy = oy * g->sh - g->ph + ky * g->dh;
                    if (iy < 0 || iy >= g->h)
                        continue;
                    for (int kx = 0; kx < g->kw; kx++) {
                        int ix = ox * g->sw - g->pw + kx * g->dw;
                        if (ix >= 0 && ix < g->w && x[(c * g->h + iy) * g->w + ix] > best)
                            best = x[(c * g->h + iy) * g->w + ix];
                    }
                }
                y[(c * g->oh + oy) * g->ow + ox] = best;
            }
}
""",
    "avg_pool2d": """\
/* nn.AvgPool2d, dividing as PyTorch does: by the window clipped to the padded input
 * (count_include_pad) or to the input itself, or by divisor (when it is not 0). */
static void avg_pool2d$Q(const $T *x, $T *y, const struct window *g,
                       int count_include_pad, int divisor)
{
    for (int c = 0; c < g->c_in; c++)
        for (int oy = 0; oy < g->oh; oy++)
            for (int ox = 0; ox < g->ow; ox++) {
                int y0 = oy * g->sh - g->ph, x0 = ox * g->sw - g->pw;
                int y1 = y0 + g->kh < g->h + g->ph ? y0 + g->kh : g->h + g->ph;
                int x1 = x0 + g->kw < g->w + g->pw ? x0 + g->kw : g->w + g->pw;
                int padded_count = (y1 - y0) * (x1 - x0), count;
                $ACC sum = 0;
                y0 = y0 > 0 ? y0 : 0;
                x0 = x0 > 0 ? x0 : 0;
                y1 = y1 < g->h ? y1 : g->h;
                x1 = x1 < g->w ? x1 : g->w;
                for (int iy = y0; iy < y1; iy++)
                    for (int ix = x0; ix < x1; ix++)
                        sum += x[(c * g->h + iy) * g->w + ix];
                count = divisor ? divisor
                                : count_include_pad ? padded_count : (y1 - y0) * (x1 - x0);
                y[(c * g->oh + oy) * g->ow + ox] = $AVERAGE;
            }
}
""",
    "adaptive_avg_pool2d": """\
/* nn.AdaptiveAvgPool2d: output cell (i, j) averages rows floor(i*h/oh) to ceil((i+1)*h/oh)
 * and the columns likewise. */
static void adaptive_avg_pool2d$Q(const $T *x, $T *y, int channels, int h, int w,
                                int oh, int ow)
{
    for (int c = 0; c < channels; c++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                int y0 = oy * h / oh, y1 = ((oy + 1) * h + oh - 1) / oh;
                int x0 = ox * w / ow, x1 = ((ox + 1) * w + ow - 1) / ow;
                int count = (y1 - y0) * (x1 - x0);
                $ACC sum = 0;
                for (int iy = y0; iy < y1; iy++)
                    for (int ix = x0; ix < x1; ix++)
                        sum += x[(c * h + iy) * w + ix];
                y[(c * oh + oy) * ow + ox] = $AVERAGE;
            }
}
""",
}

FLOAT = {
    "Q": "",
    "T": "float",
    "B": "float",
    "ACC": "float",
    "REQUANT": "",
    "STORE": "acc",
    "LOWEST": "-INFINITY",
    "AVERAGE": "sum / (float)count",
}


def sweeps(flavour: dict[str, str]) -> dict[str, str]:
    """The array-sweeping helpers of one flavour, named with its suffix."""
    return {
        name + flavour["Q"]: Template(text).substitute(flavour) for name, text in SWEEPS.items()
    }


HELPERS = {
    "copy": """\
static void copy(const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = x[i];
}
""",
    **sweeps(FLOAT),
    "softmax": """\
/* Softmax (or log-softmax) in place along the middle dim of an (outer, n, inner) array. The
 * largest entry is subtracted first so that expf cannot overflow. */
static void softmax(float *x, int outer, int n, int inner, int log_output)
{
    for (int o = 0; o < outer; o++)
        for (int i = 0; i < inner; i++) {
            float *v = x + o * n * inner + i;
            float max = v[0], sum = 0.0f;
            for (int k = 1; k < n; k++)
                max = v[k * inner] > max ? v[k * inner] : max;
            for (int k = 0; k < n; k++)
                sum += expf(v[k * inner] - max);
            for (int k = 0; k < n; k++)
                v[k * inner] = log_output ? v[k * inner] - max - logf(sum)
                                          : expf(v[k * inner] - max) / sum;
        }
}
""",
}

# Elementwise activations, applied in place: the expression that replaces v = x[i].
ACTIVATIONS = {
    "relu": "v > 0.0f ? v : 0.0f",
    "tanh": "tanhf(v)",
    "sigmoid": "1.0f / (1.0f + expf(-v))",
    "silu": "v / (1.0f + expf(-v))",
    "gelu": "0.5f * v * (1.0f + erff(v * 0.70710678118654752f))",
    "gelu_tanh": "0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)))",
    "leaky_relu": "v > 0.0f ? v : slope * v",
}


def activation(name: str) -> str:
    """The C helper ``apply_NAME`` applying activation ``name`` to n floats in place (the
    prefix keeps ``tanh`` apart from math.h's)."""
    slope = ", float slope" if name == "leaky_relu" else ""
    return (
        f"static void apply_{name}(float *x, int n{slope})\n"
        "{\n"
        "    for (int i = 0; i < n; i++) {\n"
        "        float v = x[i];\n"
        f"        x[i] = {ACTIVATIONS[name]};\n"
        "    }\n"
        "}\n"
    )


HELPERS.update({f"apply_{name}": activation(name) for name in ACTIVATIONS})


# ---- int8 ------------------------------------------------------------------------------------

INT8 = {
    "Q": "_q",
    "T": "int8_t",
    "B": "int32_t",
    "ACC": "int32_t",
    "REQUANT": " const int32_t *m, const int8_t *shift,",
    "STORE": "requantize(acc, m[o], shift[o])",
    "LOWEST": "-128",
    "AVERAGE": "divide_rounded(sum, count)",
}

INT8_HELPERS = {
    "requantize": """\
/* acc * m / 2^shift rounded to the nearest integer (halves up), clamped to [-127, 127]. The
 * product needs 64 bits; >> of a negative number is an arithmetic shift in gcc and clang. */
static int8_t requantize(int32_t acc, int32_t m, int shift)
{
    int64_t v = ((int64_t)acc * m + ((int64_t)1 << (shift - 1))) >> shift;
    return (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v);
}
""",
    "divide_rounded": """\
/* sum / count rounded to the nearest integer (halves away from zero), clamped to [-127, 127]:
 * a divisor_override below the window's size can average beyond the largest input. */
static int8_t divide_rounded(int32_t sum, int32_t count)
{
    int32_t v = sum >= 0 ? (sum + count / 2) / count : -((-sum + count / 2) / count);
    return (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v);
}
""",
    "quantize_input": """\
/* y = x / scale rounded to the nearest integer (halves away from zero) in [-127, 127]. */
static void quantize_input(const float *x, int8_t *y, int n, float inv_scale)
{
    for (int i = 0; i < n; i++) {
        float v = x[i] * inv_scale;
        v = v < -127.0f ? -127.0f : v > 127.0f ? 127.0f : v;
        y[i] = (int8_t)(v >= 0.0f ? v + 0.5f : v - 0.5f);
    }
}
""",
    "dequantize": """\
static void dequantize(const int8_t *x, float *y, int n, float scale)
{
    for (int i = 0; i < n; i++)
        y[i] = (float)x[i] * scale;
}
""",
    **sweeps(INT8),
    "relu_q": """\
static void relu_q(int8_t *x, int n)
{
    for (int i = 0; i < n; i++)
        x[i] = x[i] > 0 ? x[i] : 0;
}
""",
    "lookup": """\
/* An elementwise activation as a table: the int8 output for each of the 256 inputs. */
static void lookup(int8_t *x, int n, const int8_t *table)
{
    for (int i = 0; i < n; i++)
        x[i] = table[x[i] + 128];
}
""",
    "softmax": HELPERS["softmax"],
}
