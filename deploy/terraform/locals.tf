# Values computed from the variables alone (tests/test_deploy.py evaluates them with terraform).
locals {
  # The gateway port opens to its own networks, else to the SSH ones; expose_gateway = false closes it.
  gateway_cidrs = var.expose_gateway ? (length(var.gateway_allowed_cidrs) > 0 ? var.gateway_allowed_cidrs : var.ssh_allowed_cidrs) : []
  is_flex       = length(regexall("Flex$", var.instance_shape)) > 0
}
