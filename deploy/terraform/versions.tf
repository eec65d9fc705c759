terraform {
  required_version = ">= 1.5"
  required_providers {
    oci = {
      source  = "oracle/oci"
      version = ">= 5.30.0"
    }
    random = {
      source  = "hashicorp/random"
      version = ">= 3.5.0"
    }
  }
}

# Resource Manager supplies the credentials; from a laptop, ~/.oci/config does.
provider "oci" {
  region = var.region
}

# Dynamic groups and policies can only be written in the tenancy's home region.
provider "oci" {
  alias  = "home"
  region = local.home_region
}
