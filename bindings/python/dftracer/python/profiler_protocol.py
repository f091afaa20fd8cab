"""pydftracer's profiler protocol: what its logger expects of a back end
(ProfilerProtocol), the back end that records nothing (NoOpProfiler) and the
type of a typed tag value (TagValueTuple). Re-exported by logger.py and
common.py, pydftracer's import paths for them.
"""
from typing import Any, Dict, List, Optional, Protocol, Tuple, Union

from .entities import EntityID

TagValueTuple = Tuple[int, Union[int, float, str]]


class ProfilerProtocol(Protocol):
    """What pydftracer's logger expects of a profiler back end."""

    def initialize(self, log_file: Optional[str] = None, data_dirs: Optional[str] = None,
                   process_id: int = -1) -> None: ...

    def get_time(self) -> int: ...

    def get_config(self, key: str) -> str: ...

    def enter_event(self) -> None: ...

    def exit_event(self) -> None: ...

    def log_event(self, name: str, cat: str, start_time: int, duration: int,
                  int_args: Optional[Dict[str, TagValueTuple]] = None,
                  string_args: Optional[Dict[str, TagValueTuple]] = None,
                  float_args: Optional[Dict[str, TagValueTuple]] = None,
                  relations: Optional[Dict[Any, List[int]]] = None) -> None: ...

    def log_metadata_event(self, key: str, value: str) -> None: ...

    def declare_entity(self, type: str, key: str, store: Any, uri: str) -> EntityID: ...

    def declare_entity_type(self, type: str, role: Any, description: str) -> None: ...

    def relate_entities(self, relation: Any, subject: EntityID, object: EntityID) -> None: ...

    def set_app_metadata_int(self, key: str, value: int) -> None: ...

    def set_app_metadata_string(self, key: str, value: str) -> None: ...

    def mark_used(self, name: str) -> None: ...

    def finalize(self) -> None: ...


class NoOpProfiler:
    """A profiler that records nothing (pydftracer's fallback)."""

    def initialize(self, log_file=None, data_dirs=None, process_id=-1):
        pass

    def get_time(self):
        return 0

    def get_config(self, key):
        return ""

    def enter_event(self):
        pass

    def exit_event(self):
        pass

    def log_event(self, name, cat, start_time, duration, int_args=None, string_args=None,
                  float_args=None, relations=None):
        pass

    def log_metadata_event(self, key, value):
        pass

    def declare_entity(self, type, key, store, uri):
        return 0

    def declare_entity_type(self, type, role, description):
        pass

    def relate_entities(self, relation, subject, object):
        pass

    def set_app_metadata_int(self, key, value):
        pass

    def set_app_metadata_string(self, key, value):
        pass

    def mark_used(self, name):
        pass

    def finalize(self):
        pass
