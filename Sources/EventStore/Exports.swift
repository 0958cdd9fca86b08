// Documents are JSON values; every user of the event store sees them.
@_exported public import StrataJSON
