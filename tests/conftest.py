import sys
from pathlib import Path

# op_table.py and other shared test helpers live beside the tests
sys.path.insert(0, str(Path(__file__).parent))
