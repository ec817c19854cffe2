/*
Copyright The events-apiserver Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// DeleteFromVictoriaLogs runs the operator's procedure to delete rows from
// VictoriaLogs at baseURL: a delete task of the rows filter selects
// (POST /delete/run_task), then GET /delete/active_tasks until no task is
// left, within timeout. header goes with each request (credentials, the
// tenant).
func DeleteFromVictoriaLogs(ctx context.Context, client *http.Client, baseURL string, header http.Header, filter string, timeout time.Duration) error {
	call := func(ctx context.Context, method, path string, form url.Values) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, method, baseURL+path, strings.NewReader(form.Encode()))
		if err != nil {
			return nil, err
		}
		for name, values := range header {
			req.Header[name] = values
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, body)
		}
		return body, nil
	}
	body, err := call(ctx, http.MethodPost, "/delete/run_task", url.Values{"filter": {filter}})
	if err != nil {
		return err
	}
	var task struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal(body, &task); err != nil || task.TaskID == "" {
		return fmt.Errorf("/delete/run_task answered %q: %v", body, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		body, err := call(ctx, http.MethodGet, "/delete/active_tasks", nil)
		if err != nil {
			return false, err
		}
		var active []json.RawMessage
		if err := json.Unmarshal(body, &active); err != nil {
			return false, fmt.Errorf("/delete/active_tasks answered %q: %w", body, err)
		}
		return len(active) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("delete task %s: %w", task.TaskID, err)
	}
	return nil
}
