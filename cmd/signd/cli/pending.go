package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/textview"
)

// pendingCmd is `signd pending`: the acts under dual control
// (admin.dual_control) that wait for a second operator.
func (a *app) pendingCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pending",
		Short: "List, approve or reject the acts under dual control that wait for a second operator",
		Long: `An act named in admin.dual_control (e.g. credential_remove) is not
performed when an operator asks for it: it waits as a pending request, and
the command answers "pending request ID: ... needs approval by a second
operator within 24h". Another operator — another uid on the admin socket,
holding a role of the act — approves it, and signd performs it then, as the
first operator asked; the audit log names both. The requester cannot
approve their own request; an unapproved request expires after
admin.pending_ttl.

  list          every pending request with what it would do
  approve ID    perform it (a second operator)
  reject ID     drop it (the requester, or an operator holding its role)`,
	}
	listCmd := &cobra.Command{
		Use: "list", Short: "List the pending requests, oldest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, func(w io.Writer, ps []admin.PendingView) error {
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tOP\tREQUESTED BY\tCREATED\tEXPIRES\tREQUEST")
					for _, p := range ps {
						expires := textview.Stamp(&p.ExpiresAt)
						if p.Expired {
							expires += " (expired)"
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.Op, p.RequestedBy, textview.Stamp(&p.CreatedAt), expires, p.Request)
					}
					return tw.Flush()
				})(s.ListPending(ctx, by))
			})
		},
	}
	approveCmd := &cobra.Command{
		Use: "approve ID", Short: "Approve a pending request: signd performs it now", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, func(w io.Writer, r *admin.ApprovalResult) error {
					fmt.Fprintf(w, "approved pending request %s: %s %s as requested by %s\n", r.Pending.ID, r.Pending.Op, r.Pending.Request, r.Pending.RequestedBy)
					var out bytes.Buffer
					if json.Indent(&out, r.Result, "", "  ") == nil {
						fmt.Fprintf(w, "performed:\n%s\n", out.String())
					}
					return nil
				})(s.ApprovePending(ctx, by, args[0]))
			})
		},
	}
	rejectCmd := &cobra.Command{
		Use: "reject ID", Short: "Reject (or, as its requester, withdraw) a pending request", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, func(w io.Writer, p *admin.PendingView) error {
					fmt.Fprintf(w, "rejected pending request %s: %s %s requested by %s\n", p.ID, p.Op, p.Request, p.RequestedBy)
					return nil
				})(s.RejectPending(ctx, by, args[0]))
			})
		},
	}
	cmd.AddCommand(listCmd, approveCmd, rejectCmd)
	return cmd
}
