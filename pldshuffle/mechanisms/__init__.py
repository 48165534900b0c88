from .clones import ShuffledLDP
from .krr import ShuffledKRR
