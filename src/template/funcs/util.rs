//! Sprig's shared coercions (strval, toInt64, toFloat64, ...), used by every family.
