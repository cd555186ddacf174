"""The hosts layer: reaching, preparing, watching and fingerprinting the machines a campaign runs on."""
