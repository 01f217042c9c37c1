package main

import (
	"context"
	"strings"
	"testing"
)

func TestLockdFlags(t *testing.T) {
	var out, errb strings.Builder
	if code := runLockd(context.Background(), []string{"--bogus"}, &out, &errb); code != exitError {
		t.Errorf("bad flag: exit %d, want %d", code, exitError)
	}
	if code := runLockd(context.Background(), []string{"--hosts", " , "}, &out, &errb); code != exitError {
		t.Errorf("empty --hosts: exit %d, want %d", code, exitError)
	}
	if !strings.Contains(errb.String(), "no host") {
		t.Errorf("stderr %q does not say what is wrong", errb.String())
	}
	errb.Reset()
	if code := runLockd(context.Background(), []string{"--lock", "music"}, &out, &errb); code != exitError {
		t.Errorf("--lock music: exit %d, want %d", code, exitError)
	}
	if got := strings.TrimSpace(errb.String()); strings.Count(got, "\n") > 0 || !strings.Contains(got, `--lock "music"`) {
		t.Errorf("--lock music: stderr %q, want one line naming the flag", got)
	}
}
