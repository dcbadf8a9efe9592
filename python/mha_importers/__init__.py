"""Importers from PyTorch and ONNX into MHA-MLIR.

Each importer writes NAME.mlir (the layer as one mha.multi_head_attention,
weights as function arguments), NAME.weights/*.npy (the weights in mha's
layout: [in, out], biases [out]) and NAME.rsp (an mha-run response file
naming the entry and every argument file in order), so that

    mha-run NAME.mlir @NAME.rsp --pipeline=cpu

runs the imported layer. See docs/Integration.md.
"""
