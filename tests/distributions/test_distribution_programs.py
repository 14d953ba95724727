"""The programs distributions are for, run under scratchgrad as under PyTorch: REINFORCE on a
two-armed bandit (the policy learns the better arm in both libraries, and one policy-gradient
step on the same actions and rewards is PyTorch's), and a VAE step (the reparameterized
sample with the noise given, the Gaussian KL and a Bernoulli likelihood: loss and every
gradient PyTorch's for the same weights); a jitted sampling step draws as the eager one."""

import numpy as np
import pytest
import torch
import torch.distributions as TD
from oracle import assert_close, module_pair

import scratchgrad as sg
import scratchgrad.distributions as D
from scratchgrad.func import vmap

ARM_MEANS = (0.2, 0.8)  # Bernoulli rewards: arm 1 is better


def reinforce(lib, dists, steps=150, batch=32, seed=0):
    """A softmax policy over two arms trained by REINFORCE with a mean baseline; the
    rewards are drawn by the policy's library's own generator. Returns P(arm 1)."""
    lib.manual_seed(seed)
    logits = lib.zeros(2, requires_grad=True)
    opt = lib.optim.Adam([logits], lr=0.05)
    means = lib.tensor(ARM_MEANS)
    for _ in range(steps):
        policy = dists.Categorical(logits=logits)
        actions = policy.sample((batch,))
        rewards = dists.Bernoulli(means[actions]).sample()
        advantage = rewards - rewards.mean()
        loss = -(policy.log_prob(actions) * advantage).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return dists.Categorical(logits=logits).probs[1].item()


def test_reinforce_learns_the_better_arm_as_under_pytorch():
    ours, theirs = reinforce(sg, D), reinforce(torch, TD)
    assert theirs > 0.95 and ours > 0.95, (ours, theirs)


def test_a_policy_gradient_step_is_pytorchs():
    rng = np.random.default_rng(0)
    logits, actions = rng.standard_normal((5, 3)), rng.integers(0, 3, (7, 5))
    rewards = rng.standard_normal((7, 5))
    grads = []
    for lib, dists in ((sg, D), (torch, TD)):
        x = lib.tensor(logits, requires_grad=True)
        policy = dists.Categorical(logits=x)
        loss = -(policy.log_prob(lib.tensor(actions)) * lib.tensor(rewards)).mean()
        loss = loss - 0.01 * policy.entropy().mean()  # the entropy bonus of actor-critic
        loss.backward()
        grads.append((loss, x.grad))
    assert_close(grads[0][0], grads[1][0])
    assert_close(grads[0][1], grads[1][1])


class VAE:
    """Encoder (mean and log-variance) and decoder of a 2-D latent, as one builder for both
    libraries' nn."""

    @staticmethod
    def build(nn):
        return nn.ModuleDict(
            {
                "enc": nn.Linear(6, 8),
                "mu": nn.Linear(8, 2),
                "logvar": nn.Linear(8, 2),
                "dec": nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 6)),
            }
        )

    @staticmethod
    def loss(net, dists, x, eps):
        h = net["enc"](x).tanh()
        loc, scale = net["mu"](h), (0.5 * net["logvar"](h)).exp()
        posterior = dists.Normal(loc, scale)
        z = loc + scale * eps  # posterior.rsample() with the noise given
        likelihood = dists.Independent(dists.Bernoulli(logits=net["dec"](z)), 1)
        prior = dists.Normal(loc.new_zeros(loc.shape), loc.new_ones(loc.shape))
        kl = dists.kl_divergence(posterior, prior).sum(-1)
        return (kl - likelihood.log_prob(x)).mean(), kl


def test_a_vae_step_is_pytorchs():
    rng = np.random.default_rng(0)
    x = (rng.random((5, 6)) < 0.5).astype(np.float64)
    eps = rng.standard_normal((5, 2))
    ours, theirs = module_pair(VAE.build)
    loss, kl = VAE.loss(ours, D, sg.tensor(x), sg.tensor(eps))
    expected, expected_kl = VAE.loss(theirs, TD, torch.tensor(x), torch.tensor(eps))
    assert_close(loss, expected)
    assert_close(kl, expected_kl)
    loss.backward()
    expected.backward()
    their_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, their_params[name].grad, what=name)


def test_rsample_is_loc_plus_scale_times_the_same_draws_as_randn():
    loc = sg.tensor([1.0, -1.0], requires_grad=True)
    scale = sg.tensor([2.0, 0.5], requires_grad=True)
    sg.manual_seed(5)
    z = D.Normal(loc, scale).rsample((3,))
    sg.manual_seed(5)
    eps = sg.randn(3, 2)
    assert_close(z, loc.detach() + scale.detach() * eps, tolerance=(0, 0))
    z.sum().backward()
    assert_close(scale.grad, eps.sum(0), tolerance=(1e-12, 0))


def test_a_jitted_step_draws_as_the_eager_one():
    def step(logits, loc):
        return D.Categorical(logits=logits).sample((4,)), D.Normal(loc, 1.0).rsample((2,))

    jitted = sg.jit(step)
    logits, loc = sg.zeros(3), sg.zeros(2)
    draws = []
    for call in (step, jitted):
        sg.manual_seed(0)
        draws.append(
            [np.concatenate([t.numpy().ravel() for t in call(logits, loc)]) for _ in range(3)]
        )
    for eager, replayed in zip(*draws):
        np.testing.assert_array_equal(eager, replayed)
    assert not np.array_equal(draws[1][1], draws[1][2])  # each replay draws again


def test_vmap_draws_per_member_and_validates():
    samples = vmap(lambda p: D.Bernoulli(p).sample(), randomness="different")(
        sg.full((4000,), 0.25)
    )
    assert abs(samples.mean().item() - 0.25) < 5 * (0.25 * 0.75 / 4000) ** 0.5
    log_probs = vmap(lambda loc: D.Normal(loc, 1.0).log_prob(loc))(sg.zeros(3))
    assert_close(log_probs, np.full(3, -0.5 * np.log(2 * np.pi)))
    with pytest.raises(ValueError, match="parameter loc"):  # every member's value checked
        vmap(lambda loc: D.Normal(loc, 1.0).log_prob(loc))(sg.tensor([0.0, float("nan")]))
