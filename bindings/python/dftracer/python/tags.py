"""pydftracer's tag helpers (TagValue, TagType, TagDType), kept for code that
builds args with them. dft_fn.update() and log_event() unwrap a TagValue to
its value; the value's Python type decides how it is written."""
from enum import Enum

from .. import _core

__all__ = ["TAG_KEYS", "TagType", "TagDType", "TagValue"]

# pydftracer's tag keys (epoch, step, image_idx, image_size), in its order.
# Written once, in the extension (bindings/python/src/region.cc), whose
# dft_fn constructor takes them as parameters; Python reads that list.
TAG_KEYS = tuple(_core.TAG_KEYS)


class TagType(Enum):
    KEY = 0
    VALUE = 1
    IGNORE = 2

    def __int__(self):
        return self.value


class TagDType(Enum):
    INT = 0
    FLOAT = 1
    STRING = 2

    def __int__(self):
        return self.value


class TagValue:
    def __init__(self, value, dtype=TagDType.STRING, tag_type=TagType.KEY):
        self._dtype = dtype
        self._tag_type = tag_type
        if dtype == TagDType.INT:
            self._value = int(value)
        elif dtype == TagDType.FLOAT:
            self._value = float(value)
        else:
            self._value = str(value)

    def value(self):
        return (int(self._tag_type), self._value)


def unwrap(value):
    """A TagValue's plain value; anything else unchanged."""
    return value._value if isinstance(value, TagValue) else value
