package app

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// pingRedis checks Redis answers PING (with AUTH when the URL has
// credentials). It speaks the few RESP lines it needs itself: the readiness
// probe should not depend on a client pool's state.
func pingRedis(ctx context.Context, redisURL string) error {
	u, err := url.Parse(redisURL)
	if err != nil {
		return fmt.Errorf("redis url: %w", err)
	}
	if u.Scheme == "rediss" {
		// TLS readiness is checked by the Redis client once it is in use.
		return nil
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return fmt.Errorf("redis unreachable: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	br := bufio.NewReader(conn)
	cmd := func(args ...string) (string, error) {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := conn.Write([]byte(b.String())); err != nil {
			return "", err
		}
		line, err := br.ReadString('\n')
		return strings.TrimSpace(line), err
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		args := []string{"AUTH", pw}
		if name := u.User.Username(); name != "" {
			args = []string{"AUTH", name, pw}
		}
		if line, err := cmd(args...); err != nil || !strings.HasPrefix(line, "+OK") {
			return fmt.Errorf("redis AUTH failed")
		}
	}
	line, err := cmd("PING")
	if err != nil {
		return fmt.Errorf("redis PING: %w", err)
	}
	if line != "+PONG" {
		return fmt.Errorf("redis PING answered %q", line)
	}
	return nil
}
