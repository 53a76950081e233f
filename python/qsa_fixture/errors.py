"""The one error type of the Python reader, message for message the C++ FixtureError
(fixtures/fixture_error.h): `<file>: field '<field>': <detail>`."""


class FixtureError(ValueError):
    def __init__(self, file, field, detail):
        super().__init__(f"{file}: field '{field}': {detail}")
        self.file = file
        self.field = field
        self.detail = detail
