"""The cross-encoder judge experiment of issue #32 (not shipped): training and evaluation scripts."""
