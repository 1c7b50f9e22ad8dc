from slidewise.cli import entry

entry()
