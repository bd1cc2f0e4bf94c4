// GMII receive MAC: strips preamble/SFD and FCS, checks FCS and size.
// Output stream: one byte per cycle (m_valid), m_last on the last byte (FCS removed).
// With m_last: m_good (frame OK), m_runt, m_bad_fcs, m_oversize, m_len (incl. FCS).
// The last byte comes one idle cycle after the others (the FCS residue compare is
// registered in the cycle rx_dv drops; timing), so m_valid has one gap before m_last.
// Early stream (for the parser, 5 cycles ahead of m_data): every byte after the SFD, FCS
// included, one cycle after it is on gmii_rxd (e_valid, e_data), and e_end in the cycle
// after the last one (e_valid low then; the cycle before m_last).
`timescale 1ns / 1ps
`default_nettype none
module wccp_mac_rx #(
    parameter MIN_LEN = 64,      // incl. FCS
    parameter MAX_LEN = 1522     // incl. FCS
) (
    input  wire        clk,
    input  wire        rst,
    input  wire [7:0]  gmii_rxd,
    input  wire        gmii_rx_dv,
    input  wire        gmii_rx_er,
    output reg  [7:0]  m_data,
    output reg         m_valid,
    output reg         m_last,
    output reg         m_good,
    output reg         m_runt,
    output reg         m_bad_fcs,
    output reg         m_oversize,
    output reg  [11:0] m_len,
    output wire [7:0]  e_data,
    output reg         e_nz,       // e_data is not 0x00 (a register loaded with it: timing)
    output reg         e_valid,
    output wire        e_end
);
`include "wccp_crc32.vh"

    localparam S_IDLE = 2'd0, S_PRE = 2'd1, S_DATA = 2'd2, S_SKIP = 2'd3;
    reg [1:0]  state;
    // The CRC is crc_s ^ dt, dt being the last byte's term of the update, registered on its
    // own; with the update S of that term (sdt) registered too, crc_s is updated from local
    // registers only (timing). The update is linear: crc32_byte(c, d) = S(c) ^ T(d) with
    // S(c) = crc32_byte(c, 0), T(d) = crc32_byte(0, d), so S(crc_s ^ dt) = S(crc_s) ^ sdt.
    reg [31:0] crc_s, dt, sdt;
    reg [39:0] dly;        // last 5 bytes received, dly[7:0] newest
    reg [2:0]  fill;       // bytes in dly (saturates at 5)
    reg [11:0] cnt;        // bytes received incl. FCS (saturating)
    reg        err;
    reg        full5;      // fill == 5
    reg        lt_min;     // cnt < MIN_LEN
    reg        gt_max;     // cnt > MAX_LEN
    // cnt == MIN_LEN - 1 / MAX_LEN / 12'hFFF, each kept with cnt, so that the count and
    // its flags load from a gate over registers, not from 12-bit compares (timing)
    reg        at_min1, at_max, sat;
    localparam [11:0] MIN1 = MIN_LEN - 1, MAXL = MAX_LEN;
    reg  [3:0] crc_okb;    // bytes of crc (one cycle ago) equal the good-FCS residue's
    wire       crc_ok = &crc_okb;
    reg        fin;        // the frame ended in the previous cycle: emit its last byte
    wire [31:0] crc = crc_s ^ dt;
    assign e_data = dly[7:0];
    assign e_end = fin;
    // terms of the nibbles of a byte, each its own LUT level
    // (each term bit is an XOR of at most four bits: one LUT). No (* keep *) on these
    // wires: several of their bits are the same function, and yosys then joins unrelated
    // nets into one with two drivers, which nextpnr refuses (seen on the Colorlight i5 top)
    wire [31:0] t_lo;
    assign t_lo = crc32_byte(32'd0, {4'd0, gmii_rxd[3:0]});
    wire [31:0] t_hi;
    assign t_hi = crc32_byte(32'd0, {gmii_rxd[7:4], 4'd0});
    wire [31:0] st_lo;
    assign st_lo = crc32_byte(crc32_byte(32'd0, {4'd0, gmii_rxd[3:0]}), 8'd0);
    wire [31:0] st_hi;
    assign st_hi = crc32_byte(crc32_byte(32'd0, {gmii_rxd[7:4], 4'd0}), 8'd0);
    wire [31:0] c_lo;
    assign c_lo = crc32_byte(32'd0, {4'd0, crc_s[3:0]});
    wire [31:0] c_hi;
    assign c_hi = crc32_byte(32'd0, {crc_s[7:4], 4'd0});

    always @(posedge clk) begin
        m_valid <= 1'b0;
        m_last <= 1'b0;
        m_good <= 1'b0;
        m_runt <= 1'b0;
        m_bad_fcs <= 1'b0;
        m_oversize <= 1'b0;
        fin <= 1'b0;
        e_valid <= !rst && (state == S_DATA) && gmii_rx_dv;
        crc_okb <= {crc[31:24] == 8'hDE, crc[23:16] == 8'hBB, crc[15:8] == 8'h20, crc[7:0] == 8'hE3};
        if (rst) begin
            state <= S_IDLE;
            fill <= 3'd0;
            cnt <= 12'd0;
            err <= 1'b0;
            full5 <= 1'b0;
            lt_min <= 1'b1;
            gt_max <= 1'b0;
            at_min1 <= MIN1 == 12'd0;
            at_max <= MAXL == 12'd0;
            sat <= 1'b0;
            crc_s <= 32'hFFFFFFFF;
            dt <= 32'd0;
            sdt <= 32'd0;
            dly <= 40'd0;
            e_nz <= 1'b0;
            m_data <= 8'd0;
            m_len <= 12'd0;
        end else begin
            case (state)
            S_IDLE: begin
                if (gmii_rx_dv) begin
                    if (gmii_rxd == 8'h55) state <= S_PRE;
                    else if (gmii_rxd == 8'hD5) state <= S_DATA;
                    else state <= S_SKIP;
                end
                fill <= 3'd0;
                full5 <= 1'b0;
                cnt <= 12'd0;
                lt_min <= 1'b1;
                gt_max <= 1'b0;
                at_min1 <= MIN1 == 12'd0;
                at_max <= MAXL == 12'd0;
                sat <= 1'b0;
                err <= 1'b0;
                crc_s <= 32'hFFFFFFFF;
                dt <= 32'd0;
                sdt <= 32'd0;
            end
            S_PRE: begin
                if (!gmii_rx_dv) state <= S_IDLE;
                else if (gmii_rxd == 8'hD5) state <= S_DATA;
                else if (gmii_rxd != 8'h55) state <= S_SKIP;
            end
            S_SKIP: begin
                if (!gmii_rx_dv) state <= S_IDLE;
            end
            S_DATA: begin
                if (gmii_rx_dv) begin
                    dly <= {dly[31:0], gmii_rxd};
                    e_nz <= gmii_rxd != 8'h00;
                    crc_s <= {8'd0, crc_s[31:8]} ^ c_lo ^ c_hi ^ sdt;
                    dt <= t_lo ^ t_hi;
                    sdt <= st_lo ^ st_hi;
                    if (!sat) begin
                        cnt <= cnt + 12'd1;
                        at_min1 <= cnt + 12'd1 == MIN1;
                        at_max <= cnt + 12'd1 == MAXL;
                        sat <= cnt == 12'hFFE;
                    end
                    // length flags of the incremented count (it grows by one from 0 and
                    // saturates, so an equality is enough; no comparator chains)
                    if (at_min1) lt_min <= 1'b0;
                    if (at_max) gt_max <= 1'b1;
                    if (gmii_rx_er) err <= 1'b1;
                    if (full5) begin
                        // dly[39:32] is a payload byte, followed by >= 4 more bytes
                        m_data <= dly[39:32];
                        m_valid <= 1'b1;
                    end else begin
                        fill <= fill + 3'd1;
                        full5 <= (fill == 3'd4);
                    end
                end else begin
                    // end of frame: dly[31:0] is the FCS, dly[39:32] the last payload byte;
                    // crc_ok is registered now, the verdict comes in the next cycle (fin,
                    // while the state machine already watches for the next preamble)
                    state <= S_IDLE;
                    m_len <= cnt;
                    fin <= 1'b1;
                end
            end
            endcase
            // fill, full5, cnt flags, err and dly keep the ended frame's values in this
            // cycle (S_IDLE clears them at its end)
            if (fin) begin
                if (full5) begin
                    m_data <= dly[39:32];
                    m_valid <= 1'b1;
                    m_last <= 1'b1;
                    if (lt_min) m_runt <= 1'b1;
                    else if (err || !crc_ok) m_bad_fcs <= 1'b1;
                    else if (gt_max) m_oversize <= 1'b1;
                    else m_good <= 1'b1;
                end else if (fill != 3'd0) begin
                    // tiny fragment: emit a lone 'last' marker so it is counted as a runt
                    // (its data byte is never stored)
                    m_valid <= 1'b1;
                    m_last <= 1'b1;
                    m_data <= dly[39:32];
                    m_runt <= 1'b1;
                end
            end
        end
    end
endmodule
`default_nettype wire
