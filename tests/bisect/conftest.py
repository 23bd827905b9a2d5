"""A bisect's steps run on the batch engine: its tests share the engine tests' scenario."""

from tests.batch.conftest import paths_are_the_runners, scenario

__all__ = ["paths_are_the_runners", "scenario"]
