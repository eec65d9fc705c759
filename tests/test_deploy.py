"""deploy/terraform without a cloud or a provider registry: the HCL parsed (python-hcl2) and checked
for what the stack promises, the variable rules run by a real terraform on a provider-free copy,
cloud-init rendered and parsed, its script linted, the Resource Manager schema and the stack zip.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import hcl2
import pytest
import yaml

pytestmark = pytest.mark.slow  # deploy files: `pytest -m slow` (.ci/run) runs it

REPO = Path(__file__).resolve().parent.parent
TF = REPO / "deploy" / "terraform"
SETUP_SH = TF / "scripts" / "setup.sh"
TERRAFORM = shutil.which("terraform")
needs_terraform = pytest.mark.skipif(TERRAFORM is None, reason="terraform is not installed")
needs_shellcheck = pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")


def _plain(value):
    """python-hcl2 keeps HCL's quotes on keys and strings and marks blocks; drop both."""
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items() if k != "__is_block__"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def _stack() -> dict[str, dict]:
    parts: dict[str, dict] = {"resource": {}, "data": {}, "variable": {}, "output": {}, "locals": {}}
    for path in sorted(TF.glob("*.tf")):
        with path.open() as handle:
            parsed = _plain(hcl2.load(handle))
        for kind in ("resource", "data"):
            for block in parsed.get(kind, []):
                for rtype, named in block.items():
                    for name, body in named.items():
                        parts[kind][f"{rtype}.{name}"] = body
        for kind in ("variable", "output"):
            for block in parsed.get(kind, []):
                parts[kind].update(block)
        for block in parsed.get("locals", []):
            parts["locals"].update(block)
    return parts


STACK = _stack()
RESOURCES, VARIABLES, OUTPUTS, LOCALS = STACK["resource"], STACK["variable"], STACK["output"], STACK["locals"]


@needs_terraform
def test_terraform_files_are_formatted():
    done = subprocess.run([TERRAFORM, "fmt", "-check", "-recursive", "-diff", str(TF)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_stack_has_its_network_vm_vault_and_optional_database():
    assert set(RESOURCES) >= {
        "oci_core_vcn.picoora", "oci_core_internet_gateway.picoora", "oci_core_service_gateway.picoora",
        "oci_core_route_table.picoora", "oci_core_security_list.picoora", "oci_core_subnet.public",
        "oci_core_instance.picoora", "oci_kms_vault.picoora", "oci_kms_key.picoora",
        "oci_vault_secret.gateway_token", "oci_vault_secret.adb_admin_password",
        "oci_identity_dynamic_group.picoora", "oci_identity_policy.picoora",
        "oci_database_autonomous_database.picoora", "random_password.gateway_token",
        "oci_vault_secret.adb_picoora_password", "random_password.adb_picoora",
        "oci_load_balancer_load_balancer.picoora", "oci_load_balancer_backend_set.picoora",
        "oci_load_balancer_backend.picoora", "oci_load_balancer_listener.picoora",
        "terraform_data.fleet_needs_autonomous_db",
    }
    subnet = RESOURCES["oci_core_subnet.public"]
    assert subnet["route_table_id"] == "${oci_core_route_table.picoora.id}"
    assert subnet["security_list_ids"] == ["${oci_core_security_list.picoora.id}"]
    routes = RESOURCES["oci_core_route_table.picoora"]["route_rules"]
    assert {r["network_entity_id"] for r in routes} == {
        "${oci_core_internet_gateway.picoora.id}", "${oci_core_service_gateway.picoora.id}"}


def test_ingress_is_ssh_and_the_gateway_port_from_the_allowed_networks_only():
    security = RESOURCES["oci_core_security_list.picoora"]
    assert "ingress_security_rules" not in security  # only the dynamic blocks below, nothing fixed
    rules = [block["ingress_security_rules"] for block in security["dynamic"]]
    tcp_rules = []
    for rule in rules:
        content = rule["content"][0]
        assert content["source"] == "${ingress_security_rules.value}"
        if content["protocol"] == "6":
            tcp = content["tcp_options"][0]
            assert tcp["min"] == tcp["max"]
            tcp_rules.append((str(tcp["min"]), rule["for_each"]))
        else:
            assert content["protocol"] == "1" and content["icmp_options"][0] == {"type": 3, "code": 4}
    assert sorted(tcp_rules) == sorted([
        ("22", "${toset(var.ssh_allowed_cidrs)}"), ("${var.gateway_port}", "${toset(local.gateway_cidrs)}"),
        # with several gateways, the load balancer in the subnet reaches them (and only that subnet)
        ("${var.gateway_port}", "${local.fleet ? toset([local.subnet_cidr]) : toset([])}")])
    assert "0.0.0.0/0" not in str(rules)
    assert [r["destination"] for r in security["egress_security_rules"]] == ["0.0.0.0/0"]


def test_cidr_variables_have_no_open_default():
    assert "default" not in VARIABLES["ssh_allowed_cidrs"]
    assert VARIABLES["gateway_allowed_cidrs"]["default"] == []  # empty: the SSH networks
    assert LOCALS["gateway_cidrs"].count("var.ssh_allowed_cidrs") == 1


def test_instance_is_oracle_linux_9_with_encryption_in_transit_and_no_legacy_metadata():
    assert VARIABLES["instance_shape"]["default"] == "VM.Standard.A1.Flex"
    instance = RESOURCES["oci_core_instance.picoora"]
    assert instance["is_pv_encryption_in_transit_enabled"] is True
    assert instance["launch_options"][0]["is_pv_encryption_in_transit_enabled"] is True
    assert instance["instance_options"][0]["are_legacy_imds_endpoints_disabled"] is True
    image = STACK["data"]["oci_core_images.oracle_linux_9"]
    assert (image["operating_system"], image["operating_system_version"]) == ("Oracle Linux", "9")
    assert instance["source_details"][0]["source_id"] == "${data.oci_core_images.oracle_linux_9.images[0].id}"
    assert instance["create_vnic_details"][0]["assign_public_ip"] is True
    assert instance["metadata"]["user_data"] == "${base64gzip(local.user_data)}"


def test_no_secret_reaches_instance_metadata():
    """The VM's metadata (readable by any process on it) gets OCIDs and names, never a secret."""
    settings = LOCALS["setup_settings"]
    for key, expression in settings.items():
        assert not re.search(r"random_password|secret_content|var\.adb_admin_password|local\.adb_admin_password",
                             str(expression)), key
    assert settings["gateway_token_secret"] == "${oci_vault_secret.gateway_token.id}"
    metadata = str(RESOURCES["oci_core_instance.picoora"]["metadata"])
    assert "password" not in metadata and "token" not in metadata
    # The secrets go to the Vault, and the VM may read exactly those.
    assert "random_password.gateway_token.result" in str(RESOURCES["oci_vault_secret.gateway_token"]["secret_content"])
    policy = RESOURCES["oci_identity_policy.picoora"]["statements"]
    assert "read secret-bundles" in policy and "target.secret.id = '${id}'" in policy
    assert "local.secret_ids" in policy
    group = RESOURCES["oci_identity_dynamic_group.picoora"]
    assert group["matching_rule"] == ("ANY {${join(\", \", [for vm in oci_core_instance.picoora : "
                                      "\"instance.id = '${vm.id}'\"])}}")
    assert "oci_vault_secret.adb_picoora_password[*].id" in LOCALS["secret_ids"]


def test_autonomous_database_is_optional_free_and_23ai_or_newer():
    adb = RESOURCES["oci_database_autonomous_database.picoora"]
    assert adb["count"] == "${var.use_autonomous_db ? 1 : 0}"
    assert RESOURCES["oci_vault_secret.adb_admin_password"]["count"] == "${var.use_autonomous_db ? 1 : 0}"
    assert adb["is_free_tier"] is True and adb["db_version"] == "${var.adb_db_version}"
    assert adb["is_mtls_connection_required"] is False
    assert adb["whitelisted_ips"] == ["${oci_core_vcn.picoora.id}"]  # reachable from this VCN only
    assert VARIABLES["use_autonomous_db"]["default"] is False
    assert VARIABLES["adb_db_version"]["default"] == "23ai"
    assert VARIABLES["adb_admin_password"]["sensitive"] is True


def test_outputs_and_their_sensitivity():
    assert set(OUTPUTS) == {"instance_public_ip", "ssh_command", "setup_log_command", "health_url", "chat_command",
                            "database_mode", "gateway_token", "adb_admin_password", "instance_public_ips",
                            "gateway_url"}
    sensitive = {name for name, body in OUTPUTS.items() if body.get("sensitive")}
    assert sensitive == {"gateway_token", "adb_admin_password"}
    assert "/var/log/picoora-setup.log" in OUTPUTS["setup_log_command"]["value"]
    assert OUTPUTS["health_url"]["value"] == "http://${local.gateway_host}:${var.gateway_port}/health"
    assert OUTPUTS["gateway_url"]["value"] == "http://${local.gateway_host}:${var.gateway_port}"
    assert "oci_load_balancer_load_balancer.picoora[0].ip_address_details[0].ip_address" in LOCALS["gateway_host"]


def test_several_gateways_sit_behind_a_load_balancer_that_checks_ready():
    instance = RESOURCES["oci_core_instance.picoora"]
    assert instance["count"] == "${var.gateway_count}"
    assert VARIABLES["gateway_count"]["default"] == 1 and LOCALS["fleet"] == "${var.gateway_count > 1}"
    for name in ("load_balancer", "backend_set", "listener"):
        assert RESOURCES[f"oci_load_balancer_{name}.picoora"]["count"] == "${local.fleet ? 1 : 0}"
    lb = RESOURCES["oci_load_balancer_load_balancer.picoora"]
    assert lb["shape"] == "flexible" and lb["subnet_ids"] == ["${oci_core_subnet.public.id}"]
    assert lb["shape_details"][0] == {"minimum_bandwidth_in_mbps": 10, "maximum_bandwidth_in_mbps": 10}  # Always Free
    check = RESOURCES["oci_load_balancer_backend_set.picoora"]["health_checker"][0]
    assert (check["protocol"], check["url_path"], check["return_code"], check["port"]) == (
        "HTTP", "/ready", 200, "${var.gateway_port}")
    backend = RESOURCES["oci_load_balancer_backend.picoora"]
    assert backend["count"] == "${local.fleet ? var.gateway_count : 0}"
    assert backend["ip_address"] == "${oci_core_instance.picoora[count.index].private_ip}"
    assert backend["port"] == "${var.gateway_port}"
    listener = RESOURCES["oci_load_balancer_listener.picoora"]
    assert (listener["protocol"], listener["port"]) == ("HTTP", "${var.gateway_port}")
    assert LOCALS["setup_settings"]["database_required"] == '${local.fleet ? "yes" : "no"}'


def test_the_single_vm_of_earlier_stacks_becomes_the_first_gateway_in_place():
    moved = [block for path in TF.glob("*.tf") for block in _plain(hcl2.load(path.open())).get("moved", [])]
    assert moved == [{"from": "${oci_core_instance.picoora}", "to": "${oci_core_instance.picoora[0]}"}]


# ---- the variable rules, run by terraform on a copy that needs no provider ------------------------

GOOD = {"tenancy_ocid": "ocid1.tenancy.oc1..x", "region": "eu-frankfurt-1",
        "compartment_ocid": "ocid1.compartment.oc1..x",
        "ssh_public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample you@laptop",
        "ssh_allowed_cidrs": '["203.0.113.7/32"]'}


@pytest.fixture(scope="module")
def variables_only(tmp_path_factory):
    """variables.tf and locals.tf alone, with outputs that show the computed values."""
    if TERRAFORM is None:
        pytest.skip("terraform is not installed")
    work = tmp_path_factory.mktemp("tf-variables")
    for name in ("variables.tf", "locals.tf"):  # locals.tf's guard is a terraform_data: a built-in, no download
        shutil.copy(TF / name, work / name)
    (work / "show.tf").write_text('output "gateway_cidrs" { value = local.gateway_cidrs }\n'
                                  'output "is_flex" { value = local.is_flex }\n'
                                  'output "fleet" { value = local.fleet }\n')
    init = subprocess.run([TERRAFORM, "init", "-input=false", "-no-color"], cwd=work, capture_output=True, text=True,
                          timeout=120)
    assert init.returncode == 0, init.stdout + init.stderr
    return work


def plan(work: Path, **overrides: str) -> subprocess.CompletedProcess[str]:
    values = {**GOOD, **overrides}
    args = [a for key, value in values.items() if value is not None for a in ("-var", f"{key}={value}")]
    return subprocess.run([TERRAFORM, "plan", "-input=false", "-no-color", "-refresh=false", *args],
                          cwd=work, capture_output=True, text=True, timeout=120)


def computed(work: Path, **overrides: str) -> str:
    done = plan(work, **overrides)
    assert done.returncode == 0, done.stdout + done.stderr
    return re.sub(r"\s+", " ", done.stdout)


@pytest.mark.parametrize("overrides, complaint", [
    ({"ssh_allowed_cidrs": '["0.0.0.0/0"]'}, "a /0 (the whole internet) is refused"),
    ({"ssh_allowed_cidrs": "[]"}, "needs at least one CIDR"),
    ({"ssh_allowed_cidrs": '["my laptop"]'}, "needs at least one CIDR"),
    ({"gateway_allowed_cidrs": '["::/0"]'}, "a /0 (the whole internet) is refused"),
    ({"ssh_public_key": "-----BEGIN OPENSSH PRIVATE KEY-----"}, "one OpenSSH public key line"),
    ({"adb_admin_password": "short1A"}, "12-30 characters"),
    ({"adb_admin_password": "Picoora-Admin-2026"}, "12-30 characters"),  # contains "admin"
    ({"adb_admin_password": 'Pico"ora12345'}, "no quotes"),
    ({"adb_db_version": "19c"}, "23ai or newer"),
    ({"ollama_model": "qwen3; curl evil | sh"}, "ollama_model must be a model name"),
    ({"picoora_ref": "main\nexport X=1"}, "picoora_ref must be a branch or tag name"),
    ({"gateway_port": "1521"}, "other than 1521"),
    ({"gateway_count": "7"}, "gateway_count must be a whole number from 1 to 6"),
    ({"gateway_count": "2.5"}, "gateway_count must be a whole number from 1 to 6"),
    ({"gateway_count": "3"}, "gateway_count above 1 needs use_autonomous_db = true"),
    ({"gateway_count": "3", "use_autonomous_db": "true", "expose_gateway": "false"},
     "gateway_count above 1 needs expose_gateway = true"),
])
def test_bad_values_are_refused_with_a_clear_message(variables_only, overrides, complaint):
    done = plan(variables_only, **overrides)
    assert done.returncode != 0
    assert complaint in re.sub(r"\s+", " ", done.stderr), done.stderr


def test_gateway_networks_default_to_the_ssh_ones_and_can_be_closed(variables_only):
    assert 'gateway_cidrs = [ + "203.0.113.7/32", ]' in computed(variables_only)
    own = computed(variables_only, gateway_allowed_cidrs='["198.51.100.0/24"]')
    assert 'gateway_cidrs = [ + "198.51.100.0/24", ]' in own
    assert "gateway_cidrs = []" in computed(variables_only, expose_gateway="false")
    assert "is_flex = true" in computed(variables_only)
    assert "is_flex = false" in computed(variables_only, instance_shape="VM.Standard.E2.1.Micro")


def test_good_values_are_accepted(variables_only):
    computed(variables_only, adb_admin_password="Pico_2026_Strong", adb_db_version="26ai",
             ollama_model="hf.co/org/model:Q4_K_M", use_autonomous_db="true")
    assert "fleet = false" in computed(variables_only)
    assert "fleet = true" in computed(variables_only, gateway_count="3", use_autonomous_db="true")


# ---- cloud-init and the set-up script ------------------------------------------------------------

SAMPLE_SETTINGS = {
    "database_mode": "freepdb", "ollama_model": "qwen3:4b", "gateway_port": "18790", "gateway_exposed": "yes",
    "database_required": "no", "gateway_token_secret": "ocid1.vaultsecret.oc1.eu-frankfurt-1.example",
    "adb_admin_secret": "", "adb_user_secret": "",
    "adb_dsn": "(description=(address=(protocol=tcps)(port=1521)(host=adb.example.com))"
               "(connect_data=(service_name=x_low.adb.oraclecloud.com)))",
    "picoora_repository": "https://github.com/picoora/picoora", "picoora_ref": "main",
}


def render_cloud_init(settings: dict[str, str]) -> str:
    """templatefile() for this template: its only placeholders are ${indent(6, NAME)}."""
    values = {"settings": "\n".join(f"{k}={v}" for k, v in settings.items()), "setup_script": SETUP_SH.read_text()}
    template = (TF / "cloud-init.yaml.tftpl").read_text()
    assert set(re.findall(r"\$\{([^}]*)\}", template)) == {"indent(6, settings)", "indent(6, setup_script)"}
    return re.sub(r"\$\{indent\(6, (\w+)\)\}", lambda m: values[m.group(1)].rstrip("\n").replace("\n", "\n" + " " * 6),
                  template)


def test_cloud_init_parses_and_carries_the_script_unchanged():
    text = render_cloud_init(SAMPLE_SETTINGS)
    assert text.startswith("#cloud-config\n")
    config = yaml.safe_load(text)
    files = {f["path"]: f for f in config["write_files"]}
    assert files["/opt/picoora-setup/setup.env"]["permissions"] == "0600"
    assert files["/opt/picoora-setup/setup.sh"]["permissions"] == "0700"
    assert files["/opt/picoora-setup/setup.sh"]["content"] == SETUP_SH.read_text()
    lines = files["/opt/picoora-setup/setup.env"]["content"].splitlines()
    assert dict(line.split("=", 1) for line in lines) == SAMPLE_SETTINGS
    assert config["runcmd"] == [["bash", "/opt/picoora-setup/setup.sh"]]
    assert len(base64.b64encode(text.encode())) < 32_000  # user_data's limit, even before gzip


def test_the_script_reads_exactly_the_settings_terraform_writes():
    used = set(re.findall(r"setting (\w+)", SETUP_SH.read_text()))
    assert used == set(LOCALS["setup_settings"]) == set(SAMPLE_SETTINGS)


def test_setup_script_passes_bash_n():
    done = subprocess.run(["bash", "-n", str(SETUP_SH)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


@needs_shellcheck
@pytest.mark.parametrize("script", ["deploy/terraform/scripts/setup.sh", "deploy/build-stack-zip.sh",
                                    "scripts/check-deploy.sh"])
def test_deploy_scripts_are_shellcheck_clean(script):
    done = subprocess.run(["shellcheck", str(REPO / script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout


def test_the_vm_installs_the_unit_the_gateway_prints_unchanged():
    script = SETUP_SH.read_text()
    assert 'if ! as_user "$PICOORA" gateway --print-systemd-unit >"$UNIT.new"; then' in script
    assert 'mv "$UNIT.new" "$UNIT"' in script
    writes = re.findall(r'>\s*"\$UNIT[^"]*"', script)
    assert writes == ['>"$UNIT.new"', '>"$UNIT.d/10-picoora-deploy.conf"']  # the unit itself is never edited
    assert 'UNIT="$ROOT/etc/systemd/system/picoora-gateway.service"' in script


# ---- Resource Manager ----------------------------------------------------------------------------

def test_schema_covers_every_variable_and_output():
    schema = yaml.safe_load((TF / "schema.yaml").read_text())
    assert set(schema["variables"]) == set(VARIABLES)
    grouped = [name for group in schema["variableGroups"] for name in group["variables"]]
    assert sorted(grouped) == sorted(VARIABLES)
    assert set(schema["outputs"]) == set(OUTPUTS)
    assert {n for n, o in schema["outputs"].items() if o.get("sensitive")} == {"gateway_token", "adb_admin_password"}
    assert schema["variables"]["adb_admin_password"]["type"] == "password"
    assert schema["variables"]["instance_shape"]["default"] == VARIABLES["instance_shape"]["default"]
    assert "default" not in schema["variables"]["ssh_allowed_cidrs"]


def test_stack_zip_holds_the_stack_at_its_top_level_and_is_reproducible(tmp_path):
    first, second = tmp_path / "a" / "stack.zip", tmp_path / "b" / "stack.zip"
    for out in (first, second):
        done = subprocess.run(["bash", str(REPO / "deploy" / "build-stack-zip.sh"), str(out)],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(first) as archive:
        names = set(archive.namelist())
        assert archive.read("scripts/setup.sh") == SETUP_SH.read_bytes()
    expected = {p.name for p in TF.glob("*.tf")} | {"cloud-init.yaml.tftpl", "schema.yaml", "scripts/setup.sh"}
    assert names == expected
    assert first.read_bytes() == second.read_bytes()
