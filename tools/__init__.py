"""Tools for people working on stay, outside the package: a relay that lets a person (or an
agent) answer stay's model requests, and the Messages API wire format it and the tests'
fake API share. Not shipped in the wheel."""
