"""The PyTorch programs of ``tests/programs/`` with ``model = torch.compile(model)`` added, as
a user adds it: each program is built, its weights copied into a second copy, one copy trained
eagerly and the other through ``scratchgrad.compile`` (the compiled module passed to its
``train``), from the same seeds. The losses and the final state dicts must be equal bit for
bit, with replays run; what cannot be replayed raises a ``JitError`` naming the op and the
line; what PyTorch's compiled modules refuse is refused alike.

A chosen subset, one or two programs per feature, about 15 s. All 161 were swept on 2026-12-07
at 5d3d1bf (main's 4163637 with that day's fixes to searchsorted and integer trunc division;
75 s on one core): 123 equal bit for bit under ``sg.compile(model)``, 19 of them without a
replay (the compiled module called fewer than four times with one signature, or only its
submodules, functional_call or vmap, which run eagerly: autograd_blitz,
cgan_embedding_labels, cyclegan_reflection_instancenorm, dann_gradient_reversal, dcgan,
dp_sgd_per_sample_grads, func_model_ensemble, gan_simultaneous_inputs,
hamiltonian_nn_pendulum, kmeans_gp_regression, knowledge_distillation, maf_density,
newton_cg_hvp, pygcn_sparse, realnvp_moons, seq2seq_attention, siren_fourier_fit,
svgd_bayesian_regression, wgan_gp_spectral); 22 refused with a JitError naming the op and the
line (those of ``REFUSED``; ``.tolist()`` of packed sequences or of a Viterbi decode in
bilstm_crf_tagger, cell_unrolled_bilstm_tagger, data_pipeline_samplers,
gru_tagger_foreach_optimizer, lstm_autoencoder_anomaly; ``.item()`` in adaptive_softmax_lm
(its AdaptiveLogSoftmaxWithLoss) and glow_flow (ActNorm's data-dependent initialization);
``nonzero()`` or ``bincount()`` in moe_transformer, gin_graph_classification; NumPy draws in
convnext_drop_path, and in gumbel_softmax_vae as a constant that changes between calls; a
returned Categorical in reinforce_actor_critic; a dual tensor of forward-mode AD passed by
functional_call in forward_gradient_descent, since equal: a compiled module called inside a
dual level runs eagerly, as under PyTorch's aot_eager, which gives the tangents too); 14
raising as PyTorch's ``torch.compile`` does (the ``_orig_mod.`` state dict keys loaded into the
plain model in quickstart, checkpoint_resume, frozen_backbone_finetune,
optimizer_schedule_zoo, optimizer_in_backward, swa_ema_regression,
compiled_checkpoint_dict_outputs; an ``OptimizedModule`` indexed or iterated in
polynomial_fit, gcn_node_classifier, gradual_unfreeze_checkpoint_hooks, tiny_nerf_1d,
magnitude_pruning, style_transfer_gram; differentiation through the recorded backward in
pinn_heat_1d), the thirteen before that equal when compiled in place; two trained otherwise
than eagerly, as under PyTorch, and equal in place: vit_patches (its weight decay groups test
``named_parameters()`` names, which compiling prefixes) and char_rnn_generator (its
``load_state_dict(strict=False)`` of the ``_orig_mod.`` keys into a fresh model loads
nothing). piecewise_linear_tabular (bucketize) was refused before that day's fix, as a
constant that changes between calls. Later that day the values a forward reads from a small
integer argument became guarded instead of refused: the five programs packing sequences by
lengths passed to the model (cell_unrolled_bilstm_tagger, data_pipeline_samplers,
gru_tagger_foreach_optimizer, lstm_autoencoder_anomaly, packed_lstm_classifier) are equal now,
so 128 equal and 17 refused; and forward_gradient_descent is equal since calls inside a dual
level run eagerly: 129 and 16. On 2026-12-07 ``compile`` gained graph breaks: without
``fullgraph=True`` the calls it cannot record run eagerly, warned of once, so the programs of
``REFUSED`` and seven more (``GRAPH_BREAKS``: 15) train as their eager runs (bit for bit;
schnet_forces, whose inputs require grad and whose forces are a second derivative, within
1e-13 until a given-up call's result became the eager graph itself), and raise as before
under ``fullgraph=True``; maml_sine's meta-gradient then
reaches calls recorded before and raises PyTorch's double-backward error (``AS_PYTORCH``).
"""

import contextlib
import io
import random
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from test_programs import PROGRAMS, _load

import scratchgrad as sg
from scratchgrad.jit import compiled

# (not here: programs that call the compiled model fewer than four times, or only through
# functional_call or vmap, which run it eagerly, or with a Python float changing at every
# call, which records a program per value: they never replay)
EQUAL = [
    "barlow_twins_lars",
    "bayes_by_backprop",  # a penalty stored on the layers with its graph (self.log_q)
    "camera_pose_calibration",
    "cbow_word_embeddings",
    "channels_last_cnn",
    "clip_contrastive_attnpool",
    "compiled_accumulate_freeze",
    "compiled_bn_dropout_train_eval",
    "compiled_loss_temperature_schedule",
    "compiled_tiny_lm_trainer",
    "constrained_fit_biject_to",
    "cpu_bf16_autocast",  # bfloat16 autocast in the forward, the backward outside it
    "dataloader_grad_accumulation",
    "embeddingbag_text_classifier",
    "facenet_batch_hard_triplet",
    "fourier_neural_operator_1d",
    "fused_adamw",
    "lbfgs_fit",
    "legacy_amp",
    "llama_complex_rope",
    "logistic_regression_from_scratch",
    "matmul_precision_mlp",
    "meta_init_rope",
    "mobilenet_blocks",  # a residual around a 1x1 convolution (an unfold's view)
    "packed_lstm_classifier",  # a program per pattern of lengths (their values guarded)
    "piecewise_linear_tabular",  # bucketize of each batch's values, nanquantile edges
    "polynomial_chaos_surrogate",
    "pretrained_embedding_classifier",
    "profiled_training_steps",
    "s4d_fft_conv",  # complex parameters viewed as complex, rfft/irfft
    "segnet_max_unpool",
    "siamese_cosine",
    "simclr_ntxent",
    "sincnet_bandpass",
    "spatial_transformer",
    "ste_quantized_mlp",
    "torchscript_regressor",
    "transe_knowledge_graph",  # Embedding(max_norm=1) renormalizing its rows in place
    "transformer_mean_pool",
    "word2vec_negative_sampling",
]

# Programs whose scripts read the model's parameter names or state dict keys: with
# ``sg.compile(model)`` they see PyTorch's ``_orig_mod.`` prefix (below), so they are compiled
# in place, ``model.compile()``, which keeps the names.
IN_PLACE = ["quickstart", "vit_patches"]

# Keyword arguments of ``train`` that keep the slower programs short (still replaying).
SHORTER = {"bayes_by_backprop": {"epochs": 3}, "vit_patches": {"epochs": 1}}

# What cannot be replayed: the JitError each program meets (its op or cause, and its line).
REFUSED = {
    "maml_sine": r"SineNet\.forward \(called at .*maml_sine\.py:41\) uses a tensor that "
    r"requires grad and was made by operations outside it",
    "deq_implicit_backward": r"bool\(tensor\) \(a Python branch on a tensor's value\?\) at "
    r".*deq_implicit_backward\.py:20 ",
    "gat_node_classifier": r"GAT\.forward\(\) \(defined at .*gat_node_classifier\.py:\d+\) "
    r"draws random numbers outside scratchgrad \(mask_rng\.random\)",
    "gmm_mixture_fit": r"GaussianMixture\.forward\(\) returned tensors inside an object "
    r"\(MixtureSameFamily: _mixture_distribution, _component_distribution;",
    "gumbel_softmax_vae": r"VAE_gumbel\.forward\(\) recorded a different constant \(an array of "
    r"shape \(\d+, 4, 6\), float32\) at .*gumbel_softmax_vae\.py:19 .*frozen into the program",
    "schnet_forces": r"nonzero\(\) \(its shape depends on the values\) at .*schnet_forces\.py:56",
    "skipgram_sparse_adam": r"embedding\(sparse=True\) \(sparse gradients\) at "
    r".*skipgram_sparse_adam\.py:25",
    "vae": r"VAE\.forward\(\) \(defined at .*vae\.py:\d+\) draws random numbers outside "
    r"scratchgrad \(noise\.standard_normal\)",
    "vq_vae_ema": r"bincount\(\) \(its shape depends on the values\) at .*vq_vae_ema\.py:39",
}

# What PyTorch's compiled modules refuse too, with the same error (checked with
# torch.compile(model, backend="aot_eager"), or its "eager" backend for the first two).
AS_PYTORCH = {
    # the state dict keys of an OptimizedModule start with _orig_mod., as PyTorch's
    "quickstart": (RuntimeError, r'Unexpected key\(s\) in state_dict: "_orig_mod\.'),
    # an OptimizedModule is no Sequential: model[0] raises, as PyTorch's
    "polynomial_fit": (TypeError, r"'OptimizedModule' object is not subscriptable"),
    # double backward through the recorded backward (PyTorch's AOTAutograd refuses it too)
    "pinn_heat_1d": (RuntimeError, r"cannot be differentiated again"),
    # the same, in the meta-gradient through calls recorded by the compiled model (the calls
    # with fast weights, made outside its forward, run eagerly: raise under fullgraph=True)
    "maml_sine": (RuntimeError, r"cannot be differentiated again"),
}


def path_of(name: str) -> Path:
    return next(p for p in PROGRAMS if p.stem == name)


def seed(n: int) -> None:
    """Every generator a program may draw from without its own seed."""
    sg.manual_seed(n)
    np.random.seed(n)
    random.seed(n)


def train_both(name: str, how: str, **options) -> tuple:
    """The losses and state dicts of the program trained eagerly and compiled (``how``:
    "compile", ``sg.compile(model, **options)``; "in place", ``model.compile()``), from one
    set of weights and the same seeds. Each run loads the program anew (its module-level
    state)."""
    eager, ours = _load(path_of(name), "scratchgrad"), _load(path_of(name), "scratchgrad")
    seed(0)
    model, twin = eager.build(), ours.build()
    twin.load_state_dict(model.state_dict())
    kwargs = SHORTER.get(name, {})
    with contextlib.redirect_stdout(io.StringIO()):
        seed(1)
        expected = eager.train(model, **kwargs)
        seed(1)
        if how == "in place":
            twin.compile()
            losses = ours.train(twin, **kwargs)
        else:
            losses = ours.train(sg.compile(twin, **options), **kwargs)
    states = [{k: v.detach().numpy() for k, v in m.state_dict().items()} for m in (model, twin)]
    return (expected, losses), states


@pytest.fixture
def replays(monkeypatch):
    """The count of replays of compiled modules' recordings."""
    count = []
    run = compiled.Recording.run

    def counted(self, tensors):
        count.append(1)
        return run(self, tensors)

    monkeypatch.setattr(compiled.Recording, "run", counted)
    return count


@pytest.mark.filterwarnings("ignore")  # the programs' own warnings (deprecated names, ...)
@pytest.mark.parametrize(
    "name, how",
    [(name, "compile") for name in EQUAL] + [(name, "in place") for name in IN_PLACE],
)
def test_a_compiled_program_trains_as_its_eager_run(name, how, replays):
    (expected, losses), (eager_state, state) = train_both(name, how)
    np.testing.assert_array_equal(np.asarray(losses, float), np.asarray(expected, float))
    assert state.keys() == eager_state.keys()
    for key, value in eager_state.items():
        assert state[key].dtype == value.dtype, key
        np.testing.assert_array_equal(state[key], value, err_msg=key)
    assert replays  # (a compile that ran everything eagerly would pass the rest)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_a_compiled_program_cannot_replay_raises_naming_it_under_fullgraph(name):
    with pytest.raises(sg.JitError, match=REFUSED[name]):
        train_both(name, "compile", fullgraph=True)


# Programs whose compiled module cannot be replayed (for some calls or all): graph breaks
GRAPH_BREAKS = sorted(
    REFUSED.keys() - AS_PYTORCH.keys()
    | {
        "adaptive_softmax_lm",  # .item() in AdaptiveLogSoftmaxWithLoss
        "bilstm_crf_tagger",  # .tolist() of a Viterbi decode
        "convnext_drop_path",  # NumPy draws
        "gin_graph_classification",  # bincount()
        "glow_flow",  # .item() in ActNorm's data-dependent initialization
        "moe_transformer",  # nonzero()
        "reinforce_actor_critic",  # a returned Categorical
    }
)


@pytest.mark.parametrize("name", GRAPH_BREAKS)
def test_what_a_compiled_program_cannot_replay_runs_eagerly_as_a_graph_break(name):
    """Without ``fullgraph``, as ``torch.compile``: the calls it cannot record run eagerly
    (the program trains as its eager run, bit for bit), with one warning naming why."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (expected, losses), (eager_state, state) = train_both(name, "compile")
    np.testing.assert_array_equal(losses, expected)
    for key, value in eager_state.items():
        np.testing.assert_array_equal(state[key], value, err_msg=key)
    breaks = [str(w.message) for w in caught if "torch.compile breaks the graph" in str(w.message)]
    assert len(breaks) == 1
    assert re.search(REFUSED.get(name, ""), breaks[0])  # (what fullgraph=True raises)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(AS_PYTORCH))
def test_what_pytorchs_compiled_modules_refuse_is_refused_alike(name):
    error, message = AS_PYTORCH[name]
    with pytest.raises(error, match=message):
        train_both(name, "compile")
