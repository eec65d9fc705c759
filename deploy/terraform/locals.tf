# Values computed from the variables alone (tests/test_deploy.py evaluates them with terraform).
locals {
  # The gateway port opens to its own networks, else to the SSH ones; expose_gateway = false closes it.
  gateway_cidrs = var.expose_gateway ? (length(var.gateway_allowed_cidrs) > 0 ? var.gateway_allowed_cidrs : var.ssh_allowed_cidrs) : []
  is_flex       = length(regexall("Flex$", var.instance_shape)) > 0
  # Several gateways share one database and sit behind a load balancer.
  fleet = var.gateway_count > 1
  # The public subnet: the VCN's first /24.
  subnet_cidr = cidrsubnet(var.vcn_cidr, 24 - tonumber(split("/", var.vcn_cidr)[1]), 0)
}

# Several gateways need the one database they can all reach: Oracle AI Database Free lives on one VM.
resource "terraform_data" "fleet_needs_autonomous_db" {
  lifecycle {
    precondition {
      condition     = var.gateway_count == 1 || var.use_autonomous_db
      error_message = "gateway_count above 1 needs use_autonomous_db = true: the gateways share one Autonomous Database (Oracle AI Database Free runs inside a single VM)."
    }
    precondition {
      condition     = var.gateway_count == 1 || var.expose_gateway
      error_message = "gateway_count above 1 needs expose_gateway = true: the load balancer listens on the gateway port for gateway_allowed_cidrs."
    }
  }
}
