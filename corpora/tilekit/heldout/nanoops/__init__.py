"""nanoops: small fused ops."""
