"""Prints RANK/WORLD_SIZE/LOCAL_RANK as importing scratchgrad.distributed sets them."""

import os

import scratchgrad.distributed  # noqa: F401

print(f"{os.environ['RANK']}/{os.environ['WORLD_SIZE']}/{os.environ['LOCAL_RANK']}")
