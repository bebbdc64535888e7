"""cuda.coop 1.1.1's ``block._block_scan`` names that programs import: the scan operator
classification (:class:`ScanOp`) and the scan factories."""

from coopd.coop._scan_op import ScanOp, ScanOpCategory
from coopd.coop.block import (make_exclusive_scan, make_exclusive_sum, make_inclusive_scan,
                              make_inclusive_sum, make_scan)

__all__ = ["ScanOp", "ScanOpCategory", "make_exclusive_scan", "make_exclusive_sum",
           "make_inclusive_scan", "make_inclusive_sum", "make_scan"]
