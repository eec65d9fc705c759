variable "tenancy_ocid" {
  description = "The tenancy (Resource Manager fills it in)."
  type        = string
}

variable "region" {
  description = "The region to deploy to, e.g. eu-frankfurt-1 (Resource Manager fills it in)."
  type        = string
}

variable "compartment_ocid" {
  description = "The compartment for every resource of the stack."
  type        = string
}

variable "instance_shape" {
  description = "Compute shape; the Always Free Arm shape by default."
  type        = string
  default     = "VM.Standard.A1.Flex"
}

variable "instance_ocpus" {
  description = "OCPUs for a Flex shape."
  type        = number
  default     = 2
  validation {
    condition     = var.instance_ocpus >= 1 && var.instance_ocpus <= 64
    error_message = "instance_ocpus must be between 1 and 64."
  }
}

variable "instance_memory_in_gbs" {
  description = "Memory for a Flex shape, in GB (Ollama, the model and Oracle AI Database Free share it)."
  type        = number
  default     = 12
  validation {
    condition     = var.instance_memory_in_gbs >= 6 && var.instance_memory_in_gbs <= 1024
    error_message = "instance_memory_in_gbs must be at least 6 (the database alone wants 2) and at most 1024."
  }
}

variable "boot_volume_size_in_gbs" {
  description = "Boot volume size in GB (models and the database live on it)."
  type        = number
  default     = 100
  validation {
    condition     = var.boot_volume_size_in_gbs >= 50
    error_message = "boot_volume_size_in_gbs must be at least 50."
  }
}

variable "ssh_public_key" {
  description = "The SSH public key that may log in as opc."
  type        = string
  validation {
    condition     = can(regex("^(ssh-(ed25519|rsa)|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( .*)?$", trimspace(var.ssh_public_key)))
    error_message = "ssh_public_key must be one OpenSSH public key line (ssh-ed25519 AAAA..., ssh-rsa AAAA...)."
  }
}

# No default on purpose: the Go version's stack opened SSH and the gateway to the whole internet.
variable "ssh_allowed_cidrs" {
  description = "Networks allowed to reach SSH (22), e.g. [\"203.0.113.7/32\"]. 0.0.0.0/0 is refused."
  type        = list(string)
  validation {
    condition     = length(var.ssh_allowed_cidrs) > 0 && alltrue([for c in var.ssh_allowed_cidrs : can(cidrhost(c, 0)) && !endswith(c, "/0")])
    error_message = "ssh_allowed_cidrs needs at least one CIDR such as 203.0.113.7/32; a /0 (the whole internet) is refused."
  }
}

variable "expose_gateway" {
  description = "Open the gateway port to gateway_allowed_cidrs; false keeps it on 127.0.0.1 (reach it with ssh -L)."
  type        = bool
  default     = true
}

variable "gateway_allowed_cidrs" {
  description = "Networks allowed to reach the gateway port; empty means the SSH networks."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for c in var.gateway_allowed_cidrs : can(cidrhost(c, 0)) && !endswith(c, "/0")])
    error_message = "gateway_allowed_cidrs must hold CIDRs such as 203.0.113.7/32; a /0 (the whole internet) is refused."
  }
}

variable "gateway_port" {
  description = "The port picoora's gateway listens on."
  type        = number
  default     = 18790
  validation {
    condition     = var.gateway_port >= 1024 && var.gateway_port <= 65535 && var.gateway_port != 1521 && var.gateway_port != 11434
    error_message = "gateway_port must be an unprivileged port (1024-65535) other than 1521 (the database) and 11434 (Ollama)."
  }
}

variable "vcn_cidr" {
  description = "The VCN's address range; the public subnet takes its first /24."
  type        = string
  default     = "10.0.0.0/16"
  validation {
    condition     = can(cidrhost(var.vcn_cidr, 0)) && tonumber(split("/", var.vcn_cidr)[1]) <= 24
    error_message = "vcn_cidr must be a CIDR of /24 or larger, such as 10.0.0.0/16."
  }
}

variable "ollama_model" {
  description = "The Ollama model to pull and chat with (it must be able to call tools)."
  type        = string
  default     = "qwen3:4b"
  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9._/-]*(:[A-Za-z0-9._-]+)?$", var.ollama_model))
    error_message = "ollama_model must be a model name such as qwen3:4b or llama3.1:8b."
  }
}

variable "use_autonomous_db" {
  description = "Store in an Always Free Autonomous Database instead of Oracle AI Database Free on the VM."
  type        = bool
  default     = false
}

# At most 6: an Always Free Autonomous Database takes 30 sessions, and each gateway's pool holds up to 4
# (oracle.pool_max), so 6 gateways (24) leave room for setup-oracle and a CLI on the VMs.
variable "gateway_count" {
  description = "How many gateway VMs (1-6); above 1 they share the Autonomous Database behind a load balancer (health check /ready). The Always Free Arm allowance (4 OCPUs, 24 GB) fits two VMs of the default size."
  type        = number
  default     = 1
  validation {
    condition     = var.gateway_count == floor(var.gateway_count) && var.gateway_count >= 1 && var.gateway_count <= 6
    error_message = "gateway_count must be a whole number from 1 to 6 (an Always Free Autonomous Database takes 30 sessions; each gateway may hold 4)."
  }
}

variable "adb_admin_password" {
  description = "ADMIN password of the Autonomous Database; empty generates one (output adb_admin_password)."
  type        = string
  default     = ""
  sensitive   = true
  validation {
    condition = var.adb_admin_password == "" || (
      length(var.adb_admin_password) >= 12 && length(var.adb_admin_password) <= 30 &&
      can(regex("[A-Z]", var.adb_admin_password)) && can(regex("[a-z]", var.adb_admin_password)) &&
      can(regex("[0-9]", var.adb_admin_password)) && !can(regex("[\"'\\s]", var.adb_admin_password)) &&
      !can(regex("(?i)admin", var.adb_admin_password))
    )
    error_message = "adb_admin_password: 12-30 characters with upper case, lower case and a digit, no quotes, spaces or \"admin\"; or empty to generate one."
  }
}

variable "adb_db_version" {
  description = "Autonomous Database version (23ai or newer: picoora needs AI Vector Search)."
  type        = string
  default     = "23ai"
  validation {
    condition     = can(regex("^(2[3-9]|[3-9][0-9])ai$", var.adb_db_version))
    error_message = "adb_db_version must be 23ai or newer (for example 23ai or 26ai)."
  }
}

variable "picoora_repository" {
  description = "Where the VM downloads picoora from (a GitHub repository URL)."
  type        = string
  default     = "https://github.com/picoora/picoora"
  validation {
    condition     = can(regex("^https://[A-Za-z0-9.-]+(/[A-Za-z0-9._-]+)+$", var.picoora_repository))
    error_message = "picoora_repository must be an https URL such as https://github.com/OWNER/picoora."
  }
}

variable "picoora_ref" {
  description = "The branch or tag of picoora_repository to install."
  type        = string
  default     = "main"
  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9._/-]*$", var.picoora_ref))
    error_message = "picoora_ref must be a branch or tag name."
  }
}
