data "oci_identity_tenancy" "this" {
  tenancy_id = var.tenancy_ocid
}

data "oci_identity_regions" "all" {}

data "oci_identity_availability_domains" "all" {
  compartment_id = var.tenancy_ocid
}

# "All <region> Services In Oracle Services Network": Vault, Object Storage, Autonomous Database.
data "oci_core_services" "all" {
  filter {
    name   = "name"
    values = ["All .* Services In Oracle Services Network"]
    regex  = true
  }
}

# The newest Oracle Linux 9 image built for the chosen shape (Arm images for A1).
data "oci_core_images" "oracle_linux_9" {
  compartment_id           = var.compartment_ocid
  operating_system         = "Oracle Linux"
  operating_system_version = "9"
  shape                    = var.instance_shape
  sort_by                  = "TIMECREATED"
  sort_order               = "DESC"
}

locals {
  home_region = one([for r in data.oci_identity_regions.all.regions : r.name if r.key == data.oci_identity_tenancy.this.home_region_key])
  suffix      = random_id.suffix.hex
}

# Keeps names unique when the stack is deployed more than once in a tenancy.
resource "random_id" "suffix" {
  byte_length = 3
}
