"""A long annotation run banked in shards inside the repository (``run``), resumed from its bank, with the dataset card it writes (``card``) and the re-execution of banked calls (``rerun``)."""
