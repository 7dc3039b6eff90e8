"""A throwaway certificate authority and a localhost server certificate for the emulator.

The SDK's CRT client speaks HTTP/2 only over TLS (ALPN ``h2``; no cleartext prior knowledge)
and verifies the server against a trust store, so the emulator serves TLS with a certificate
signed by a CA made here; the client is told to trust that CA (``TTS_SAGEMAKER_CA_BUNDLE`` for
``SageMakerTransport``). Keys never leave the directory they are written to.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

HOSTNAMES = ("localhost",)
ADDRESSES = ("127.0.0.1", "::1")
VALID_FOR = datetime.timedelta(days=7)


@dataclass(frozen=True, slots=True)
class LocalTLS:
    """Paths of the CA certificate (to trust) and the server's certificate and key."""

    ca_file: Path
    cert_file: Path
    key_file: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def make_local_tls(directory: Path) -> LocalTLS:
    """Write ``ca.pem``, ``server.pem`` and ``server.key`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("sagemaker-local test CA"))
        .issuer_name(_name("sagemaker-local test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(h) for h in HOSTNAMES]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in ADDRESSES]
    server = (
        x509.CertificateBuilder()
        .subject_name(_name(HOSTNAMES[0]))
        .issuer_name(ca.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.OID_SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    tls = LocalTLS(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    tls.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    tls.cert_file.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    tls.key_file.write_bytes(_pem_key(server_key))
    tls.key_file.chmod(0o600)
    return tls
