// Properties of wccp_arbiter, proved by SymbiYosys (wccp_arbiter.sby; tests/test_formal.py) for
// N = 2 and N = 3, for every request sequence from reset:
//  - a grant names a source below N; a new grant goes to a source that requested in the cycle
//    the arbiter decided;
//  - a grant is held, unchanged, while its owner keeps requesting, and ends (one idle cycle)
//    when the owner stops; the arbiter then remembers that owner as the last one;
//  - round robin: a new grant goes to the first requester after the last owner, cyclically.
//    Hence a source that keeps requesting is granted before any other source is granted twice:
//    it waits for at most N - 1 frames.
`default_nettype none
module wccp_arbiter_props #(
    parameter N = 3
) (
    input wire clk
);
    localparam GW = (N > 2) ? 2 : 1;
    (* anyseq *) wire [N-1:0] req;
    (* anyseq *) wire         rst;
    wire          grant_valid;
    wire [GW-1:0] grant;
    wire [GW-1:0] last;         // the arbiter's last owner, made a port by the script (expose)
    wccp_arbiter dut (.clk(clk), .rst(rst), .req(req), .grant_valid(grant_valid), .grant(grant), .last(last));

    reg past_ok = 1'b0;
    always @(posedge clk) past_ok <= 1'b1;
    always @(*) if (!past_ok) assume(rst);

    // the previous cycle's inputs, outputs and last owner
    reg [N-1:0]  p_req;
    reg [GW-1:0] p_grant, p_last;
    reg          p_valid, p_rst;
    always @(posedge clk) begin
        p_req <= req;
        p_grant <= grant;
        p_valid <= grant_valid;
        p_rst <= rst;
        p_last <= last;
    end

    // cyclic distance from a to b, 1..N (b == a: N, a full turn)
    function integer dist(input integer a, input integer b);
        dist = (b > a) ? b - a : b + N - a;
    endfunction

    // checked on the state after each clock edge against the inputs before it
    always @(*) if (past_ok && !p_rst) begin
        assert(last < N);
        if (grant_valid)
            assert(grant < N);
        if (grant_valid && !p_valid)                    // a new grant: to a source requesting
            assert(p_req[grant]);
        if (!grant_valid && !p_valid)                   // no grant while nobody requested
            assert(p_req == {N{1'b0}});
        if (p_valid && p_req[p_grant])                  // held while its owner requests
            assert(grant_valid && grant == p_grant);
        if (p_valid && !p_req[p_grant])                 // released when it stops: the last owner
            assert(!grant_valid && last == p_grant);
    end
    genvar g;
    generate
    for (g = 0; g < N; g = g + 1) begin : rr
        // round robin: a new grant goes to no requester further from the last owner than g
        always @(*) if (past_ok && !p_rst && grant_valid && !p_valid && p_req[g])
            assert(dist(p_last, grant) <= dist(p_last, g));
    end
    endgenerate
    localparam [GW-1:0] FIRST_LAST = N - 1;         // after reset source 0 comes first
    always @(*) if (past_ok && p_rst)
        assert(!grant_valid && last == FIRST_LAST);
endmodule
`default_nettype wire
