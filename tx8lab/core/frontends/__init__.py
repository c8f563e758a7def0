"""Frontends: the built-in model zoo and the ONNX importer, both producing tx8be modules.

See DESIGN.md §4. ``tx8lab.core.frontends.onnx`` maps standard ONNX ops onto tx8be ops.
"""
