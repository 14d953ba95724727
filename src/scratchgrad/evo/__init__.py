"""Evolution strategies over stacked parameters, batched environments, local and Ray backends."""

from scratchgrad.evo.envs import ENVS, Acrobot, CartPole, Pendulum, VectorEnv, make
from scratchgrad.evo.policy import MLPPolicy
from scratchgrad.evo.run import RunResult, episode_returns, evaluate, fresh_returns, run
from scratchgrad.evo.strategies import CMAES, OpenAIES, SimpleGA, centered_ranks
