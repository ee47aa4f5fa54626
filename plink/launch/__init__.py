"""What launchers need: hostfiles, rankfiles, torchrun maps and environment hints from an order."""
