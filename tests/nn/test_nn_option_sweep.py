"""Differences a sweep of the nn modules over their options and edge cases found, each against
torch: ``embedding_bag`` in max mode of no index at all, and of a 2-D input of empty bags;
``MultiheadAttention`` of inputs of other dims (with PyTorch's AssertionError); reflect and
replicate padding of empty channels or an empty dim, and ``pad``'s error type; ``unfold`` of an
empty batch; ``pixel_shuffle`` and ``pixel_unshuffle`` by a factor below 1; layer and RMS norms
over no dims; ``binary_cross_entropy`` of a target outside [0, 1]; convolutions and poolings
given one number in a list for every dim; ``gelu``'s error type; max pooling, ``unfold`` and
``fold`` of dtypes PyTorch's kernels refuse, and max pooling of negative integers; attention
of vectors; transposed convolutions whose padding crops every column; ceil_mode pooling of an
input smaller than its window, and avg_pool3d's check of the kernel size; a conv's padding_mode
with one number in a list."""

import numpy as np
import pytest
import torch
from oracle import assert_close, assert_raises_as_torch, module_pair

import scratchgrad as sg


@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_max_of_no_index_gives_empty_bags_zeros_as_torch(include_last_offset):
    # amax refused the empty dim of the (bags, indices) grid
    results = []
    for m in (sg, torch):
        weight = m.tensor(np.ones((5, 3)), requires_grad=True)
        bag = m.nn.EmbeddingBag.from_pretrained(
            weight, freeze=False, mode="max", include_last_offset=include_last_offset
        )
        out = bag(m.zeros(0, dtype=m.int64), m.tensor([0, 0, 0]))
        out.sum().backward()
        results.append((out, bag.weight.grad))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


@pytest.mark.parametrize("shape", [(3, 0), (0, 0)])
def test_embedding_bag_refuses_a_2d_input_of_empty_bags_as_torch(shape):
    # it gave 0 bags for 3
    assert_raises_as_torch(
        lambda m: m.nn.functional.embedding_bag(m.zeros(shape, dtype=m.int64), m.ones(5, 3)),
        RuntimeError,
        "embedding_bag: a 2D input holds bags of one length, not 0",
    )


ATTENTION_SHAPE_CASES = [
    # (query, key, value, key_padding_mask, attn_mask)
    ((1, 3, 2, 8), (1, 4, 2, 8), (1, 4, 2, 8), None, None),  # 4-D
    ((3, 8), (4, 2, 8), (4, 2, 8), None, None),  # an unbatched query, batched keys
    ((3, 2, 8), (4, 2, 8), (5, 2, 8), None, None),  # keys and values of other lengths
    ((3, 2, 8), (4, 2, 8), (4, 2, 8), (4,), None),
    ((3, 2, 8), (4, 2, 8), (4, 2, 8), (2, 5), None),
    ((3, 2, 8), (4, 2, 8), (4, 2, 8), None, (4,)),
]


@pytest.mark.parametrize("shapes", ATTENTION_SHAPE_CASES)
def test_multihead_attention_refuses_inputs_of_other_dims_as_torch(shapes):
    # they reached an unpacking or a matmul, or broadcast
    def call(m):
        query, key, value, padding, mask = (None if s is None else m.zeros(s) for s in shapes)
        padding = None if padding is None else padding.bool()
        m.manual_seed(0)
        attention = m.nn.MultiheadAttention(8, 2)
        return attention(query, key, value, key_padding_mask=padding, attn_mask=mask)

    assert_raises_as_torch(call, AssertionError, "multi_head_attention_forward: ")


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize(
    ("shape", "padding"),
    [((2, 0, 5), (1, 1)), ((0, 5), (1, 1)), ((3, 0, 4), (1, 1)), ((2, 0, 4, 4), (1, 1, 1, 1))],
)
def test_reflect_and_replicate_pad_refuse_empty_channels_as_torch(mode, shape, padding):
    # they padded nothing into an empty result (only the batch may be empty)
    assert_raises_as_torch(
        lambda m: m.nn.functional.pad(m.zeros(shape), padding, mode),
        RuntimeError,
        f"pad: {mode} padding needs an input with no empty dim",
    )


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_reflect_and_replicate_pad_of_an_empty_dim_raise_runtime_error_as_torch(mode):
    # replicate read index -1 of the empty dim: an IndexError
    assert_raises_as_torch(
        lambda m: m.nn.functional.pad(m.zeros(2, 3, 0), (1, 1), mode),
        RuntimeError,
        f"pad: {mode} padding needs an input with no empty dim",
    )


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding", [(1, 1, 1), (1,) * 8])
def test_pad_of_a_bad_length_raises_runtime_error_as_torch(mode, padding):
    assert_raises_as_torch(
        lambda m: m.nn.functional.pad(m.zeros(2, 3, 4), padding, mode),
        RuntimeError,
        "pad: padding length must be even",
    )


def test_empty_batch_pads_as_torch():
    for mode in ("reflect", "replicate", "circular"):
        out = sg.nn.functional.pad(sg.zeros(0, 3, 5), (1, 2), mode)
        assert out.shape == (0, 3, 8)


@pytest.mark.parametrize("options", [{}, {"padding": 1, "stride": 2}])
def test_unfold_of_an_empty_batch_as_torch(options):
    # its reshape to (N, C*KH*KW, -1) could not tell the windows' count with N = 0
    results = []
    for m in (sg, torch):
        x = m.zeros(0, 3, 4, 4, requires_grad=True)
        out = m.nn.Unfold(2, **options)(x)
        out.sum().backward()
        results.append((out, x.grad))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


@pytest.mark.parametrize("factor", [0, -2])
@pytest.mark.parametrize(("name", "argument"), [("shuffle", "upscale"), ("unshuffle", "downscale")])
def test_pixel_shuffle_refuses_a_factor_below_1_as_torch(name, argument, factor):
    # 0 divided by zero
    assert_raises_as_torch(
        lambda m: getattr(m.nn.functional, f"pixel_{name}")(m.zeros(1, 4, 2, 2), factor),
        RuntimeError,
        f"pixel_{name} expects a positive {argument}_factor, but got {factor}",
    )


@pytest.mark.parametrize("name", ["layer_norm", "rms_norm"])
def test_norm_over_no_dims_is_refused_as_torch(name):
    # it normalised each entry alone: layer_norm gave zeros
    assert_raises_as_torch(
        lambda m: getattr(m.nn.functional, name)(m.ones(3, 4), ()),
        RuntimeError,
        "Expected normalized_shape to be at least 1-dimensional",
    )


@pytest.mark.parametrize("name", ["LayerNorm", "RMSNorm"])
def test_norm_module_over_no_dims_is_refused_as_torch(name):
    assert_raises_as_torch(
        lambda m: getattr(m.nn, name)(())(m.ones(3, 4)),
        RuntimeError,
        "Expected normalized_shape to be at least 1-dimensional",
    )


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan")])
def test_binary_cross_entropy_refuses_a_target_outside_0_1_as_torch(value):
    # it gave a loss (the input's range alone was checked)
    assert_raises_as_torch(
        lambda m: m.nn.BCELoss()(m.tensor([0.5, 0.5]), m.tensor([0.2, value])),
        RuntimeError,
        "binary_cross_entropy: all elements of target should be between 0 and 1",
    )


ONE_NUMBER_CASES = [
    ("Conv2d", {"stride": (2,), "dilation": [2], "padding": (1,)}, (1, 4, 7, 6)),
    ("Conv3d", {"stride": [2]}, (1, 4, 5, 6, 5)),
    ("ConvTranspose2d", {"stride": (2,), "padding": [1], "output_padding": (1,)}, (1, 4, 4, 3)),
    ("ConvTranspose3d", {"dilation": (2,)}, (1, 4, 3, 2, 3)),
]


@pytest.mark.parametrize(("name", "options", "shape"), ONE_NUMBER_CASES)
def test_convolution_takes_one_number_in_a_list_for_every_dim_as_torch(name, options, shape):
    # "stride must be an int or 2 ints, got (2,)"
    ours, theirs = module_pair(lambda nn: getattr(nn, name)(4, 2, 3, **options))
    x = np.random.default_rng(0).standard_normal(shape)
    assert repr(ours) == repr(theirs)
    assert_close(ours(sg.tensor(x)), theirs(torch.tensor(x)))


POOL_ONE_NUMBER_CASES = [
    ("max_pool3d", {"kernel_size": (2,), "stride": [1], "padding": (1,), "dilation": (2,)}),
    ("avg_pool3d", {"kernel_size": [3], "stride": (2,), "padding": [1]}),
    ("max_pool1d", {"kernel_size": 2, "stride": []}),  # (no stride: the kernel size)
    ("avg_pool2d", {"kernel_size": 2, "stride": []}),
]


@pytest.mark.parametrize(("name", "options"), POOL_ONE_NUMBER_CASES)
def test_pooling_takes_one_number_in_a_list_for_every_dim_as_torch(name, options):
    dims = int(name[-2])
    x = np.random.default_rng(0).standard_normal((2, 3, *(5, 6, 5)[:dims]))
    ours = getattr(sg.nn.functional, name)(sg.tensor(x), **options)
    assert_close(ours, getattr(torch.nn.functional, name)(torch.tensor(x), **options))


def test_gelu_of_an_unknown_approximation_raises_runtime_error_as_torch():
    assert_raises_as_torch(
        lambda m: m.nn.GELU(approximate="sigmoid")(m.ones(2)),
        RuntimeError,
        "approximate argument must be either none or tanh",
    )


REFUSED_DTYPE_CASES = [
    ("max_pool1d", (1, 1, 8), "int64", {}),  # (with return_indices PyTorch takes integers)
    ("max_pool1d", (1, 8), "int32", {}),
    ("max_pool2d", (1, 1, 4, 4), "bool", {}),
    ("max_pool3d", (1, 1, 2, 2, 2), "bool", {"return_indices": True}),
    ("max_pool2d", (1, 1, 4, 4), "complex64", {}),
    ("unfold", (1, 1, 4, 4), "int64", {}),
    ("unfold", (1, 4, 4), "int32", {}),
]


@pytest.mark.parametrize(("name", "shape", "dtype", "options"), REFUSED_DTYPE_CASES)
def test_pooling_and_unfold_refuse_dtypes_as_torch(name, shape, dtype, options):
    # they gave a result
    assert_raises_as_torch(
        lambda m: getattr(m.nn.functional, name)(
            m.ones(shape, dtype=getattr(m, dtype)), 2, **options
        ),
        NotImplementedError,
        f'"{name}" not implemented for {dtype}',
    )


def test_fold_refuses_integers_as_torch():
    assert_raises_as_torch(
        lambda m: m.nn.functional.fold(m.ones(1, 4, 4, dtype=m.int64), (3, 3), 2),
        NotImplementedError,
        '"fold" not implemented for int64',
    )


@pytest.mark.parametrize("name", ["max_pool1d", "max_pool2d", "max_pool3d"])
def test_max_pooling_of_integers_with_indices_as_torch(name):
    dims = int(name[-2])
    shape = (1, 2, *(4, 4, 4)[:dims])
    x = np.random.default_rng(0).integers(-9, 9, shape)
    ours = getattr(sg.nn.functional, name)(sg.tensor(x), 2, return_indices=True)
    theirs = getattr(torch.nn.functional, name)(torch.tensor(x), 2, return_indices=True)
    for o, t in zip(ours, theirs):
        assert o.tolist() == t.tolist()


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
@pytest.mark.parametrize(
    "options", [{"padding": 1}, {"ceil_mode": True}, {"padding": 1, "return_indices": True}]
)
def test_max_pooling_of_negative_integers_pads_with_the_least_value_as_torch(dtype, options):
    # -inf padding cast to 0 in int8 and int16: the padding won over negative entries
    x = -np.random.default_rng(0).integers(1, 9, (1, 2, 5, 5))
    results = [
        m.nn.functional.max_pool2d(m.tensor(x, dtype=getattr(m, dtype)), 3, 2, **options)
        for m in (sg, torch)
    ]
    for ours, theirs in zip(*(r if isinstance(r, tuple) else (r,) for r in results)):
        assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("shapes", [((4,), (4,), (4,)), ((3, 4), (4,), (3, 4))])
def test_attention_of_vectors_raises_runtime_error_as_torch(shapes):
    # an IndexError from reading the sequence dim
    assert_raises_as_torch(
        lambda m: m.nn.functional.scaled_dot_product_attention(*(m.ones(s) for s in shapes)),
        RuntimeError,
        "scaled_dot_product_attention: expected query, key and value of at least 2 dims",
    )


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(
    ("name", "options", "shape"),
    [
        ("ConvTranspose1d", {"stride": 3, "padding": 1, "output_padding": 2}, (2, 1, 1)),
        (
            "ConvTranspose2d",
            {"stride": (1, 3), "padding": (0, 1), "output_padding": (0, 2)},
            (2, 1, 3, 1),
        ),
    ],
)
def test_transposed_convolution_whose_padding_crops_every_column_as_torch(
    name, options, shape, bias
):
    # only output_padding is left: it raised "gives an empty output"
    ours, theirs = module_pair(lambda nn: getattr(nn, name)(1, 2, 1, bias=bias, **options))
    x = np.random.default_rng(0).standard_normal(shape)
    results = []
    for layer, m in ((ours, sg), (theirs, torch)):
        xi = m.tensor(x, requires_grad=True)
        out = layer(xi)
        (out * out).sum().backward()
        results.append((out, xi.grad, layer.weight.grad))
    for a, b in zip(*results):
        assert_close(a, b)


def test_convolution_of_an_empty_batch_may_be_written_in_place_as_torch():
    for layer in (sg.nn.Conv2d(1, 2, 2), sg.nn.ConvTranspose2d(1, 2, 2)):
        out = layer(sg.ones(0, 1, 3, 3))
        out.relu_()  # (a read-only broadcast view refused it)


CEIL_MODE_CASES = [
    ("max_pool2d", (1, 7), {"kernel_size": (3, 4), "stride": (3, 2), "dilation": (1, 2)}),
    ("max_pool1d", (2,), {"kernel_size": 4, "stride": 2, "padding": 1}),
    ("max_pool3d", (2, 2, 2), {"kernel_size": 3, "stride": 2, "return_indices": True}),
    ("avg_pool2d", (2, 1), {"kernel_size": (3, 2), "stride": 3}),
    ("avg_pool1d", (2,), {"kernel_size": 4, "stride": 2, "padding": 1}),
    ("avg_pool2d", (2, 2), {"kernel_size": 4, "padding": 1, "count_include_pad": False}),
    ("lp_pool2d", (2, 2), {"norm_type": 2, "kernel_size": 4}),
]


@pytest.mark.parametrize(("name", "size", "options"), CEIL_MODE_CASES)
def test_ceil_mode_pooling_of_an_input_smaller_than_its_window_as_torch(name, size, options):
    # a window that starts inside the input may outgrow it: it raised "smaller than the kernel"
    x = np.abs(np.random.default_rng(0).standard_normal((2, 3, *size))) + 0.1
    results = []
    for m in (sg, torch):
        xi = m.tensor(x, requires_grad=True)
        out = getattr(m.nn.functional, name)(xi, ceil_mode=True, **options)
        out = out if isinstance(out, tuple) else (out,)
        (out[0] * out[0]).sum().backward()
        results.append((*out, xi.grad))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


@pytest.mark.parametrize("name", ["avg_pool3d", "lp_pool3d"])
def test_avg_pool3d_refuses_an_input_smaller_than_the_kernel_as_torch(name):
    # (PyTorch's check leaves the padding out: it refuses what avg_pool2d takes)
    options = {"padding": 1} if name == "avg_pool3d" else {"norm_type": 2}
    assert_raises_as_torch(
        lambda m: getattr(m.nn.functional, name)(
            m.ones(1, 1, 2, 4, 4), kernel_size=3, stride=1, **options
        ),
        RuntimeError,
        "avg_pool3d: input image of size .* smaller than kernel size",
    )


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv_padding_mode_with_one_number_in_a_list_pads_one_dim_as_torch(mode):
    # (so a 2-d convolution refuses it, as PyTorch's F.pad does: it read padding[1], an IndexError)
    assert_raises_as_torch(
        lambda m: m.nn.Conv2d(4, 2, 3, padding=(1,), padding_mode=mode)(m.zeros(1, 4, 6, 6)),
        NotImplementedError,
        f"pad: {mode} padding of the last 1 dims needs a 2-D or 3-D input",
    )
