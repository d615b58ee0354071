package admin

import (
	"crypto/rand"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/routing"
	"github.com/ai-gateway/gateway/internal/secret"
)

func TestConfigSlug(t *testing.T) {
	re := regexp.MustCompile(`^pc-([a-z0-9]+(-[a-z0-9]+)*-)?[a-z0-9]{6}$`)
	for _, name := range []string{"Prod fallback", "  ", "Ünïcode ✓ name", strings.Repeat("long name ", 20)} {
		s := configSlug(name)
		if !re.MatchString(s) || len(s) > 60 {
			t.Errorf("configSlug(%q) = %q", name, s)
		}
	}
	if configSlug("x") == configSlug("x") {
		t.Error("slugs are not random")
	}
}

func TestSealAndMask(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	box, err := secret.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte(`{"targets":[{"provider":"openai","api_key":"sk-1"},{"provider":"bedrock","aws_secret_access_key":"s","aws_region":"eu"}]}`)
	c := &routing.StoredConfig{ID: "id-1", Config: SealConfig(box, "id-1", plain)}
	if strings.Contains(string(c.Config), "sk-1") || !strings.HasPrefix(string(c.Config), sealedPrefix) {
		t.Fatalf("not sealed: %s", c.Config)
	}
	got, err := OpenConfig(box, c)
	if err != nil || string(got) != string(plain) {
		t.Fatalf("open: %s %v", got, err)
	}
	// Bound to the config's id.
	if _, err := OpenConfig(box, &routing.StoredConfig{ID: "id-2", Config: c.Config}); err == nil {
		t.Error("a sealed config opened under another id")
	}
	// Plain (unsealed) configs read as they are.
	if got, _ := OpenConfig(box, &routing.StoredConfig{ID: "x", Config: plain}); string(got) != string(plain) {
		t.Error("plain config changed")
	}

	masked := maskSecrets(plain)
	if strings.Contains(string(masked), "sk-1") || strings.Contains(string(masked), `"s"`) || !strings.Contains(string(masked), `"aws_region":"eu"`) {
		t.Errorf("masked %s", masked)
	}
	// Sending the masked form back keeps the previous credentials; a
	// placeholder where there was none is refused.
	restored, err := restoreSecrets(masked, plain)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	json.Unmarshal(restored, &a)
	json.Unmarshal(plain, &b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("restored %s, want %s", ja, jb)
	}
	_, err = restoreSecrets([]byte(`{"targets":[{"provider":"openai","api_key":"sk-1"},{"provider":"x","api_key":"********"},{"provider":"y","api_key":"********"}]}`),
		[]byte(`{"targets":[{"provider":"openai","api_key":"sk-1"}]}`))
	if he := httpx.As(err); he.Status != 400 || he.Param != "config.targets[1].api_key" {
		t.Errorf("placeholder without a previous credential: %v", err)
	}
}
