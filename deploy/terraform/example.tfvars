# Copy to terraform.tfvars and fill in (terraform.tfvars holds your network and key: do not commit it).
tenancy_ocid     = "ocid1.tenancy.oc1..aaaaaaaaexample"
region           = "eu-frankfurt-1"
compartment_ocid = "ocid1.compartment.oc1..aaaaaaaaexample"
ssh_public_key   = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyOnlyExampleKeyOnlyExampleKey you@laptop"

ssh_allowed_cidrs = ["203.0.113.7/32"]
# gateway_allowed_cidrs = ["198.51.100.0/24"]   # default: the SSH networks
# expose_gateway        = false                 # keep the gateway on the VM's 127.0.0.1 (ssh -L)

ollama_model      = "qwen3:4b"
use_autonomous_db = false
# gateway_count     = 3                           # with use_autonomous_db = true: 3 gateways behind a load balancer
