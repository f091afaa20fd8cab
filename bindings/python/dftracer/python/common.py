"""pydftracer's `dftracer.python.common`: the names its modules share.

The logger class, dft_fn, the tag and entity types and the profiler protocol
live in their own modules here (logger.py, region.py, tags.py, entities.py,
profiler_protocol.py); this module gathers them under pydftracer's import
path. It imports logger.py, never the reverse: logger.py re-exports the same
names from where they are defined.
"""
from .entities import EntityID, EntityRelation, EntityRole, EntityStore
from .env import *  # noqa: F401,F403
from .logger import dftracer, get_time_scale, profiler
from .profiler_protocol import NoOpProfiler, ProfilerProtocol, TagValueTuple
from .region import dft_fn
from .tags import TagDType, TagType, TagValue

__all__ = [
    "dftracer", "dft_fn", "TagValue", "TagType", "TagDType", "TagValueTuple",
    "EntityStore", "EntityRole", "EntityRelation", "EntityID", "ProfilerProtocol",
    "NoOpProfiler", "get_time_scale", "profiler",
]
