"""2LHA aggregation schedules: the plan (masters per group), its action DAG, the verifier,
Autotune (Quicktune/Finetune) and the torch.distributed executor."""
