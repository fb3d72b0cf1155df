package deploy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// certs is a throwaway CA and a server certificate it signed for 127.0.0.1
// and localhost, as PEM files for the proxies and git, and as a pool for Go
// clients.
type certs struct {
	CA, Cert, Key string // file paths
	Pool          *x509.CertPool
}

func newCerts(t testing.TB) certs {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "grasp deploy test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := certs{
		CA:   filepath.Join(dir, "ca.pem"),
		Cert: filepath.Join(dir, "fullchain.pem"),
		Key:  filepath.Join(dir, "privkey.pem"),
		Pool: x509.NewCertPool(),
	}
	c.Pool.AddCert(caCert)
	pemOf := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	writeFile(t, c.CA, string(pemOf("CERTIFICATE", caDER)))
	writeFile(t, c.Cert, string(append(pemOf("CERTIFICATE", der), pemOf("CERTIFICATE", caDER)...)))
	if err := os.WriteFile(c.Key, pemOf("EC PRIVATE KEY", keyDER), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// client is an HTTPS client that trusts only the throwaway CA. h2 lets it
// negotiate HTTP/2; without it every request is HTTP/1.1 (websocket
// handshakes need that).
func (c certs) client(h2 bool) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: c.Pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: h2,
	}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr}
}
