"""`tauproxy cassette import`: vcrpy / pytest-recording cassettes adopted as tauproxy cassettes.

vcr_file.py     a vcrpy cassette file read with vcrpy's own loader (vcrpy is imported only here)
chat_answer.py  a recorded chat-completions response (JSON, or a stream assembled) as serve's answer
importer.py     each interaction sent through serve's own app, so it is keyed as a live call is
"""

from tauproxy.vcr_import.importer import ImportReport, LeftOut, import_vcr_files

__all__ = ["ImportReport", "LeftOut", "import_vcr_files"]
