// Active discovery (register block PROBE, docs/regmap.md): the packet-out buffer and its
// sender, and the ring of ARP replies captured on the receive ports (wccp_arpcap).
//
// Register bus: the same registered bus as wccp_regs. Writes take effect two cycles after
// reg_wr; read data comes with rvalid four cycles after reg_rd, in the same cycle as
// wccp_regs' reg_rvalid for that read (wccp_regs answers every read outside its counter
// blocks with 0: fpga_core ORs the two).
//
// Packet out: PKTOUT_CTRL starts a send (ignored while busy, or for a LEN outside 14..64 or
// no port): the first LEN bytes of the buffer go out of each port in the mask, port 0 first,
// as one frame each. The sender is a third source of the egress arbiters, with the builders'
// interface: req (one-hot egress), m_data / m_valid / m_last presented in the cycle m_ready
// (the registered grant) pops them; the MAC pads and appends the FCS. The byte on m_data is
// a register (W's top byte); the next word of the buffer is prefetched into NW.
//
// Capture ring: ARPCAP_ENTRIES entries of {sip, mac, port}; capture n goes into entry
// n mod 8 and ARPCAP_COUNT counts them. The two ports' reports are latched and written one
// per cycle (a port reports at most once per frame, so a latch is free again long before
// its next report).
`timescale 1ns / 1ps
`default_nettype none
`include "wccp_regmap.vh"
module wccp_probe (
    input  wire        clk,
    input  wire        rst,
    input  wire [23:0] reg_addr,
    input  wire        reg_wr,
    input  wire [31:0] reg_wdata,
    input  wire        reg_rd,
    output reg  [31:0] rdata,
    output reg         rvalid,
    input  wire        cap0_valid,
    input  wire [79:0] cap0_data,      // {sender IP, source MAC}
    input  wire        cap1_valid,
    input  wire [79:0] cap1_data,
    output reg  [1:0]  req,
    output wire [7:0]  m_data,
    output reg         m_valid,
    output reg         m_last,
    input  wire        m_ready
);
    localparam [23:0] BASE = `WCCP_PROBE_BASE;
    localparam [5:0]  A_CTRL = `WCCP_PKTOUT_CTRL;
    localparam [5:0]  A_COUNT = `WCCP_ARPCAP_COUNT;

    // ---------------- register access, decoded in registered steps ----------------
    reg        z1, wr1, rd1;
    reg [5:0]  a1;
    reg [31:0] wd1;
    reg        a_buf1, a_ctrl1;    // the access is to PKTOUT_DATA / PKTOUT_CTRL (offsets)
    reg        go1;                // its data is a valid send: LEN 14..64, a port
    always @(posedge clk) begin
        z1 <= reg_addr[23:6] == BASE[23:6];
        wr1 <= reg_wr && !rst;
        rd1 <= reg_rd && !rst;
        a1 <= reg_addr[5:0];
        wd1 <= reg_wdata;
        a_buf1 <= reg_addr[5:4] == 2'd0;
        a_ctrl1 <= reg_addr[5:0] == A_CTRL;
        go1 <= reg_wdata[6:0] >= 7'd14 && reg_wdata[6:0] <= 7'd64 &&
               reg_wdata[`WCCP_PKTOUT_PORTS_SHIFT +: 2] != 2'b00;
    end
    wire w_buf  = wr1 && z1 && a_buf1;
    wire w_ctrl = wr1 && z1 && a_ctrl1;

    // ---------------- packet-out buffer and sender ----------------
    reg [31:0] mem [0:15];
    always @(posedge clk)
        if (w_buf) mem[a1[3:0]] <= wd1;

    reg        busy;
    reg [1:0]  pend;           // ports still to send to
    reg [6:0]  len;
    reg [6:0]  rem;            // bytes left of the frame, the one on m_data included
    reg [31:0] w, nw;          // the word being sent (top byte on m_data), the next one
    reg [3:0]  wi;             // buffer index of nw
    reg [1:0]  bi;             // byte of w on m_data
    reg        nwl;            // load nw from mem[wi]
    reg        ld0, ld1;       // frame set-up steps
    reg        nx;             // the second frame's set-up starts next cycle (a gap cycle
                               // after the first: its egress' grant has been released)
    reg        e;              // egress of the frame being sent
    reg [15:0] sent;
    wire       pop = m_valid && m_ready;
    wire       start = w_ctrl && go1 && !busy;
    assign m_data = w[31:24];
    always @(posedge clk) begin
        nwl <= 1'b0;
        ld1 <= ld0;
        ld0 <= nx;
        nx <= 1'b0;
        if (start) begin
            busy <= 1'b1;
            pend <= wd1[`WCCP_PKTOUT_PORTS_SHIFT +: 2];
            len <= wd1[6:0];
            ld0 <= 1'b1;
        end
        if (ld0) begin
            e <= !pend[0];
            w <= mem[4'd0];
            wi <= 4'd1;
            bi <= 2'd0;
            rem <= len;
        end
        if (ld1) begin
            nw <= mem[wi];
            req <= e ? 2'b10 : 2'b01;
            m_valid <= 1'b1;
            m_last <= 1'b0;
        end
        if (nwl) nw <= mem[wi];
        if (pop) begin
            rem <= rem - 7'd1;
            m_last <= rem == 7'd2;
            bi <= bi + 2'd1;
            if (bi == 2'd3) begin
                w <= nw;
                wi <= wi + 4'd1;
                nwl <= 1'b1;
            end else begin
                w <= {w[23:0], 8'd0};
            end
            if (m_last) begin
                m_valid <= 1'b0;
                req <= 2'b00;
                sent <= sent + 16'd1;
                pend[e] <= 1'b0;
                if (e == 1'b0 && pend[1]) nx <= 1'b1;
                else busy <= 1'b0;
            end
        end
        if (rst) begin
            busy <= 1'b0;
            pend <= 2'b00;
            req <= 2'b00;
            m_valid <= 1'b0;
            m_last <= 1'b0;
            ld0 <= 1'b0;
            ld1 <= 1'b0;
            nx <= 1'b0;
            nwl <= 1'b0;
            sent <= 16'd0;
        end
    end

    // ---------------- ARP capture ring ----------------
    reg        p0, p1;          // a port's report waits to be written
    reg [80:0] c0, c1;          // {port, sip, mac}
    reg [80:0] ring [0:7];
    reg [31:0] count;
    // configuration contents (LUT RAM initial values): an entry never written reads 0
    integer ri;
    initial begin
        for (ri = 0; ri < 8; ri = ri + 1) ring[ri] = 81'd0;
        for (ri = 0; ri < 16; ri = ri + 1) mem[ri] = 32'd0;
    end
    always @(posedge clk) begin
        if (cap0_valid) begin p0 <= 1'b1; c0 <= {1'b0, cap0_data}; end
        if (cap1_valid) begin p1 <= 1'b1; c1 <= {1'b1, cap1_data}; end
        if (p0) begin
            ring[count[2:0]] <= c0;
            count <= count + 32'd1;
            if (!cap0_valid) p0 <= 1'b0;
        end else if (p1) begin
            ring[count[2:0]] <= c1;
            count <= count + 32'd1;
            if (!cap1_valid) p1 <= 1'b0;
        end
        if (rst) begin
            p0 <= 1'b0;
            p1 <= 1'b0;
            count <= 32'd0;
        end
    end

    // ---------------- reads: four cycles, like wccp_regs ----------------
    reg        rd2, rd3;
    reg [5:0]  a2;
    reg [80:0] e2;              // the ring entry of the access
    reg [31:0] q3;
    always @(posedge clk) begin
        rd2 <= rd1 && z1;
        a2 <= a1;
        e2 <= ring[a1[4:2]];
        rd3 <= rd2;
        q3 <= 32'd0;
        if (a2 == A_CTRL)
            q3 <= {sent, 15'd0, busy};
        else if (a2 == A_COUNT)
            q3 <= count;
        else if (a2[5]) begin
            case (a2[1:0])
            2'd0: q3 <= e2[79:48];
            2'd1: q3 <= {8'd0, 3'd0, e2[80], 4'd0, e2[47:32]};
            2'd2: q3 <= e2[31:0];
            default: q3 <= 32'd0;
            endcase
        end
        rvalid <= rd3 && !rst;
        rdata <= rd3 ? q3 : 32'd0;
    end
endmodule
`default_nettype wire
