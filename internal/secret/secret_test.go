package secret

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSealOpen(t *testing.T) {
	key := bytes.Repeat([]byte{7}, KeySize)
	b, err := NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed := b.Seal([]byte("sk-provider-secret"), []byte("vk-1"))
	if bytes.Contains(sealed, []byte("sk-provider-secret")) {
		t.Fatal("plaintext visible in sealed value")
	}
	pt, err := b.Open(sealed, []byte("vk-1"))
	if err != nil || string(pt) != "sk-provider-secret" {
		t.Fatalf("Open = %q, %v", pt, err)
	}
	if _, err := b.Open(sealed, []byte("vk-2")); !errors.Is(err, ErrOpen) {
		t.Fatalf("Open with other aad: %v, want ErrOpen", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := b.Open(sealed, []byte("vk-1")); !errors.Is(err, ErrOpen) {
		t.Fatalf("Open tampered: %v, want ErrOpen", err)
	}
	other, _ := NewBox(bytes.Repeat([]byte{8}, KeySize))
	if _, err := other.Open(b.Seal([]byte("x"), nil), nil); !errors.Is(err, ErrOpen) {
		t.Fatalf("Open with other key: %v, want ErrOpen", err)
	}
	if _, err := b.Open([]byte{1, 2}, nil); !errors.Is(err, ErrOpen) {
		t.Fatalf("Open short: %v", err)
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	k1, created, err := LoadKey("", dir)
	if err != nil || !created || len(k1) != KeySize {
		t.Fatalf("first LoadKey = %d bytes, created %v, %v", len(k1), created, err)
	}
	st, err := os.Stat(filepath.Join(dir, KeyFileName))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}
	k2, created, err := LoadKey("", dir)
	if err != nil || created || !bytes.Equal(k1, k2) {
		t.Fatalf("second LoadKey differs or created=%v: %v", created, err)
	}
	env := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, KeySize))
	k3, _, err := LoadKey(env, dir)
	if err != nil || !bytes.Equal(k3, bytes.Repeat([]byte{1}, KeySize)) {
		t.Fatalf("env key: %v", err)
	}
	if _, _, err := LoadKey("not base64!", dir); err == nil {
		t.Fatal("bad base64 accepted")
	}
	if _, _, err := LoadKey(base64.StdEncoding.EncodeToString([]byte("short")), dir); err == nil {
		t.Fatal("short key accepted")
	}
}
