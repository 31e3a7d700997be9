"""Pure parsers: text in, data out; they raise only :class:`aiaudit.errors.ParseError`."""
