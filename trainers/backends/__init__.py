"""Policy backends (``codea1_register_backends``): what trainers generate rollouts with and
update. One module per backend; trainers look them up by name and never import them."""
