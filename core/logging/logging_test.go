package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONFormatWritesObjectsWithSubLoggerName(t *testing.T) {
	var buf bytes.Buffer
	log, err := New("debug", "json", &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Named("relay").Info("listening", "addr", "127.0.0.1:7334")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON object: %q: %v", buf.String(), err)
	}
	if line["@module"] != "grasp.relay" || line["@message"] != "listening" || line["addr"] != "127.0.0.1:7334" {
		t.Fatalf("unexpected fields: %v", line)
	}
}

func TestTextFormatAndLevelFiltering(t *testing.T) {
	var buf bytes.Buffer
	log, err := New("WARN", "text", &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	out := buf.String()
	if strings.Contains(out, "hidden") {
		t.Fatalf("info line written at warn level: %q", out)
	}
	if !strings.Contains(out, "[WARN]  grasp: shown: k=1") {
		t.Fatalf("unexpected text line: %q", out)
	}
	if strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Fatalf("text format wrote JSON: %q", out)
	}
}

func TestEveryLevelAccepted(t *testing.T) {
	for _, l := range Levels {
		if _, err := New(l, "text", &bytes.Buffer{}); err != nil {
			t.Errorf("level %q: %v", l, err)
		}
	}
	for _, f := range Formats {
		if _, err := New("info", f, &bytes.Buffer{}); err != nil {
			t.Errorf("format %q: %v", f, err)
		}
	}
}

func TestBadLevelAndFormatRejected(t *testing.T) {
	if _, err := New("verbose", "text", nil); err == nil || !strings.Contains(err.Error(), `"verbose"`) {
		t.Fatalf("bad level: err=%v", err)
	}
	if _, err := New("info", "xml", nil); err == nil || !strings.Contains(err.Error(), `"xml"`) {
		t.Fatalf("bad format: err=%v", err)
	}
}
