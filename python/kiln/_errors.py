"""KilnError and the status codes of the C API (kiln_status in include/kiln/kiln.h)."""

import enum


class Status(enum.IntEnum):
    OK = 0
    INVALID_ARGUMENT = 1
    UNSUPPORTED = 2
    COMPILE_ERROR = 3
    RESOURCE_EXHAUSTED = 4
    DRIVER_ERROR = 5
    CACHE_ERROR = 6
    NOT_READY = 7
    NO_DEVICE = 8
    INTERNAL = 9


class KilnError(Exception):
    """A kiln call failed. ``status`` is the kiln.Status code, ``message`` kiln's own words
    (it names the function, the argument or operand, the value, and what would be accepted)."""

    def __init__(self, status, message):
        try:
            self.status = Status(status)
        except ValueError:
            self.status = status
        self.message = message
        name = self.status.name if isinstance(self.status, Status) else f"status {status}"
        super().__init__(f"{name}: {message}")


class LibraryNotFoundError(OSError):
    """libkiln.so could not be loaded (see kiln._lib for where it is looked for)."""
