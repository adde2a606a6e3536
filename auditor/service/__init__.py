"""Service use cases: the functions the Lambda handlers (and the demo) call, one per trigger."""
