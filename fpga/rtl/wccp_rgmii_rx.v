// RGMII <-> GMII for ECP5 (board top only; not part of the simulated core).
// Receive: IDDRX1F on the PHY's RX clock, then an elastic FIFO into the core clock that
// starts forwarding a frame only when a few bytes are buffered (both clocks are 125 MHz
// +-100 ppm, so a 1522-byte frame drifts by less than one byte and never underruns).
// Transmit: ODDRX1F on the core clock; the forwarded TX clock relies on the PHY's internal
// TX delay (provisional: board-specific skew handling).
`timescale 1ns / 1ps
`default_nettype none
module wccp_rgmii_rx (
    input  wire       rgmii_rxc,
    input  wire [3:0] rgmii_rxd,
    input  wire       rgmii_rx_ctl,
    input  wire       clk,
    input  wire       rst,
    output reg  [7:0] gmii_rxd,
    output reg        gmii_rx_dv,
    output reg        gmii_rx_er
);
    wire [3:0] d_r, d_f;
    wire       c_r, c_f;
    genvar i;
    generate
        for (i = 0; i < 4; i = i + 1) begin : g_d
            IDDRX1F iddr (.D(rgmii_rxd[i]), .SCLK(rgmii_rxc), .RST(1'b0), .Q0(d_r[i]), .Q1(d_f[i]));
        end
    endgenerate
    IDDRX1F iddr_ctl (.D(rgmii_rx_ctl), .SCLK(rgmii_rxc), .RST(1'b0), .Q0(c_r), .Q1(c_f));

    // write side (rx clock): data bytes while DV, plus one end marker when DV falls
    reg [9:0] mem [0:15];          // {end, er, data}
    reg [4:0] wp, wp_gray;
    reg       dv_d;
    always @(posedge rgmii_rxc) begin
        dv_d <= c_r;
        if (c_r) begin
            mem[wp[3:0]] <= {1'b0, c_r ^ c_f, d_f, d_r};
            wp <= wp + 5'd1;
        end else if (dv_d) begin
            mem[wp[3:0]] <= {1'b1, 9'd0};
            wp <= wp + 5'd1;
        end
        wp_gray <= (wp >> 1) ^ wp;
    end
    integer m;
    initial begin
        wp = 5'd0;
        wp_gray = 5'd0;
        dv_d = 1'b0;
        for (m = 0; m < 16; m = m + 1) mem[m] = 10'd0;
    end

    // read side (core clock); an empty FIFO within a frame (cannot happen within +-100 ppm)
    // is flagged as an error
    reg [4:0] wg1, wg2, rp;
    reg       in_frame;
    reg [4:0] wbin;
    integer k;
    always @(*) begin
        wbin[4] = wg2[4];
        for (k = 3; k >= 0; k = k - 1) wbin[k] = wbin[k + 1] ^ wg2[k];
    end
    // the decoded write pointer is registered once more (timing): one more cycle of latency
    reg  [4:0] wbin_r;
    initial begin                    // (the outputs follow the head entry from the start)
        wg1 = 5'd0;
        wg2 = 5'd0;
        wbin_r = 5'd0;
        rp = 5'd0;
    end
    wire [9:0] head = mem[rp[3:0]];
    // this cycle's level wbin_r - rp is lv_r - popped: lv_r = the last cycle's wbin minus
    // the last cycle's rp (in reset: minus the rp that reset sets), popped = the last cycle
    // popped; so each compare of the level below is a compare of lv_r, picked by popped,
    // without a subtractor on the way from rp (timing)
    reg  [4:0] lv_r;
    reg        popped;
    initial begin
        lv_r = 5'd0;
        popped = 1'b0;
    end
    // level >= k
    wire       ge1 = popped ? (lv_r >= 5'd2) : (lv_r != 5'd0);
    wire       ge2 = popped ? (lv_r >= 5'd3) : (lv_r >= 5'd2);
    wire       ge3 = popped ? (lv_r >= 5'd4) : (lv_r >= 5'd3);
    wire       ge4 = popped ? (lv_r >= 5'd5) : (lv_r >= 5'd4);
    // level flags registered from the last cycle's level minus the last cycle's pop: a lower
    // bound of this cycle's level (the write pointer only grows), so the read decision takes
    // only registers and the head entry (timing)
    reg        lv_nz;            // level >= 1 (0 in reset: nothing is read)
    reg        lv_go;            // level >= 3 (at one byte per cycle: the level >= 4 of the
                                 // cycle before, when a frame starts)
    // read (pop) when lv_nz and (in a frame, or lv_go, or the head is an end marker). Every
    // register's next value is formed for both values of head[9] from registers only, so the
    // head entry (distributed RAM) passes one LUT level (timing)
    wire       p_data = lv_nz && (in_frame || lv_go);   // pop if head is data
    wire       p_mark = lv_nz;                          // pop if head is a marker
    // (suffix _m: the value if head is an end marker, _d: if head is data)
    (* keep *) wire odv_m, odv_d, nz_m, nz_d, go_m, go_d, if_m, if_d;
    assign odv_m = !p_mark && in_frame;             // o_dv, o_er (underrun in a frame)
    assign odv_d = p_data || in_frame;              // o_dv
    assign nz_m = p_mark ? ge2 : ge1;
    assign nz_d = p_data ? ge2 : ge1;
    assign go_m = p_mark ? ge4 : ge3;
    assign go_d = p_data ? ge4 : ge3;
    assign if_m = !p_mark && in_frame;              // in_frame
    assign if_d = p_data || in_frame;
    // GMII out of the FIFO, then registered once more towards the core (the MAC sits far from
    // the RGMII pins; timing): two cycles from the head entry to gmii_*
    reg  [7:0] o_rxd;
    reg        o_dv, o_er;
    always @(posedge clk) begin
        wg1 <= wp_gray;
        wg2 <= wg1;
        wbin_r <= wbin;
        lv_r <= wbin - (rst ? wbin_r : rp);
        popped <= !rst && (head[9] ? p_mark : p_data);
        lv_nz <= !rst && (head[9] ? nz_m : nz_d);
        lv_go <= head[9] ? go_m : go_d;
        o_rxd <= head[7:0];              // (qualified by o_dv)
        o_dv <= head[9] ? odv_m : odv_d;
        o_er <= head[9] ? odv_m : (p_data ? head[8] : in_frame);
        gmii_rxd <= o_rxd;
        gmii_rx_dv <= o_dv;
        gmii_rx_er <= o_er;
        in_frame <= !rst && (head[9] ? if_m : if_d);
        if (rst) rp <= wbin_r;           // the write side (RX clock) is not reset: empty the
                                         // FIFO by catching up with the write pointer
        else if (head[9] ? p_mark : p_data) rp <= rp + 5'd1;
    end
endmodule

`default_nettype wire
