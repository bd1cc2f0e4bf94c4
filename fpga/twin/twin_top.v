// Digital-twin wrapper around fpga_core (simulation only, never synthesised).
//
// The twin's Python side (cocotb) must not wake up once per clock: that would limit the
// simulation to a few ten thousand cycles per second. Instead every byte-level activity
// runs in this wrapper, in HDL, and Python only exchanges whole frames and whole SPI
// transactions through memories (VPI writes/reads, no simulation time) and a few
// request/acknowledge counters:
//
//   * per Ethernet port a frame injector: NSLOT frame slots (32-bit words, big-endian,
//     byte 0 of the frame in [31:24] of word 0). Python fills slot (inN_head % NSLOT),
//     writes its length (bytes, FCS included) and increments the inN_head input; the
//     injector sends preamble, SFD, the bytes and a 12-byte gap on GMII and increments
//     inN_tail.
//   * per Ethernet port a frame capture: GMII tx bytes after the SFD into NSLOT slots;
//     capN_head counts captured frames, Python acknowledges with the capN_tail input.
//     A frame that finds the capture full is counted in capN_drop (never silently lost).
//   * an SPI master: Python writes the MOSI bytes of one transaction (one chip-select low
//     period, the exact bytes the MCU sends) into spi_tx, the length into spi_len and
//     increments spi_req; the master clocks them into fpga_core's real SPI slave (mode 0,
//     SCLK = clk / (2*SPI_HALF)), stores the MISO bytes in spi_rx and sets spi_ack = spi_req.
`timescale 1ns / 1ps
`default_nettype none
module twin_top #(
    parameter CLK_PER_US = 125,
    parameter SPI_HALF = 4,          // SCLK half period in clk cycles: the slave updates MISO 3 cycles after SCLK falls
    parameter NSLOT_LG = 5,
    parameter SPI_WORDS = 512
) (
    input  wire        clk /*verilator public_flat_rw*/,
    input  wire        rst /*verilator public_flat_rw*/,
    input  wire [15:0] in0_head /*verilator public_flat_rw*/,
    input  wire [15:0] in1_head /*verilator public_flat_rw*/,
    output wire [15:0] in0_tail /*verilator public_flat_rw*/,
    output wire [15:0] in1_tail /*verilator public_flat_rw*/,
    output wire [15:0] cap0_head /*verilator public_flat_rw*/,
    output wire [15:0] cap1_head /*verilator public_flat_rw*/,
    input  wire [15:0] cap0_tail /*verilator public_flat_rw*/,
    input  wire [15:0] cap1_tail /*verilator public_flat_rw*/,
    output wire [31:0] cap0_drop /*verilator public_flat_rw*/,
    output wire [31:0] cap1_drop /*verilator public_flat_rw*/,
    input  wire [15:0] spi_req /*verilator public_flat_rw*/,
    output wire [15:0] spi_ack /*verilator public_flat_rw*/,
    input  wire [11:0] spi_len /*verilator public_flat_rw*/,
    input  wire        bus_mode /*verilator public_flat_rw*/,    // 0: SPI pins, 1: register bus
    output wire        redirect_active /*verilator public_flat_rw*/
);
`ifdef TWIN_INTERNAL_CLOCK
    // clock generated in HDL (Verilator --timing): no VPI callback per clock edge
    reg cclk = 1'b0;
    always #4 cclk = ~cclk;
`else
    wire cclk = clk;
`endif
    localparam SLOT_WORDS = 400;               // 1600 bytes per slot: the longest frame the core
                                               // sends is a tagged GRE one at MTU 1532, 1554 bytes
    localparam NSLOT = 1 << NSLOT_LG;

    wire [7:0] rxd0, rxd1, txd0, txd1;
    wire       rxdv0, rxdv1, txen0, txen1, txer0, txer1;
    reg        sck, cs_n, mosi;
    wire       miso;
    wire [31:0] dbg_rdata;
    wire        dbg_rvalid;
    reg  [23:0] rb_addr;
    reg         rb_wr, rb_rd;
    reg  [31:0] rb_wdata;

    fpga_core #(.CLK_PER_US(CLK_PER_US), .PEARSON(1)) core (
        .clk(cclk), .rst(rst),
        .gmii0_rxd(rxd0), .gmii0_rx_dv(rxdv0), .gmii0_rx_er(1'b0),
        .gmii0_txd(txd0), .gmii0_tx_en(txen0), .gmii0_tx_er(txer0),
        .gmii1_rxd(rxd1), .gmii1_rx_dv(rxdv1), .gmii1_rx_er(1'b0),
        .gmii1_txd(txd1), .gmii1_tx_en(txen1), .gmii1_tx_er(txer1),
        .spi_sck(sck), .spi_cs_n(cs_n), .spi_mosi(mosi), .spi_miso(miso),
        .dbg_reg_addr(rb_addr), .dbg_reg_wr(rb_wr), .dbg_reg_wdata(rb_wdata), .dbg_reg_rd(rb_rd),
        .dbg_reg_rdata(dbg_rdata), .dbg_reg_rvalid(dbg_rvalid),
        .redirect_active(redirect_active));

    twin_gmii_inject #(.NSLOT_LG(NSLOT_LG), .SLOT_WORDS(SLOT_WORDS)) inj0 (
        .clk(cclk), .rst(rst), .head(in0_head), .tail(in0_tail), .txd(rxd0), .txdv(rxdv0));
    twin_gmii_inject #(.NSLOT_LG(NSLOT_LG), .SLOT_WORDS(SLOT_WORDS)) inj1 (
        .clk(cclk), .rst(rst), .head(in1_head), .tail(in1_tail), .txd(rxd1), .txdv(rxdv1));
    twin_gmii_capture #(.NSLOT_LG(NSLOT_LG), .SLOT_WORDS(SLOT_WORDS)) cap0 (
        .clk(cclk), .rst(rst), .rxd(txd0), .rxdv(txen0), .rxer(txer0), .head(cap0_head),
        .tail(cap0_tail), .drop(cap0_drop));
    twin_gmii_capture #(.NSLOT_LG(NSLOT_LG), .SLOT_WORDS(SLOT_WORDS)) cap1 (
        .clk(cclk), .rst(rst), .rxd(txd1), .rxdv(txen1), .rxer(txer1), .head(cap1_head),
        .tail(cap1_tail), .drop(cap1_drop));

    // ---------------- SPI master ----------------
    reg [31:0] spi_tx [0:SPI_WORDS-1] /*verilator public_flat_rw*/;   // written by Python only
    reg [31:0] spi_rx [0:SPI_WORDS-1] /*verilator public_flat_rd*/;
    reg [31:0] rb_rx [0:SPI_WORDS-1] /*verilator public_flat_rd*/;
    reg [15:0] sm_ack;
    wire [15:0] rb_ack_w;
    assign spi_ack = bus_mode ? rb_ack_w : sm_ack;
    reg [2:0]  sst;
    reg [11:0] sbyte;
    reg [2:0]  sbit;
    reg [7:0]  shalf;
    reg [7:0]  rxb;
    localparam SS_IDLE = 3'd0, SS_CS = 3'd1, SS_LOW = 3'd2, SS_HIGH = 3'd3, SS_END = 3'd4, SS_GAP = 3'd5;
    wire [31:0] txw = spi_tx[sbyte[11:2]];
    wire [7:0]  txb = txw[31 - 8 * sbyte[1:0] -: 8];
    always @(posedge cclk) begin
        if (rst) begin
            sst <= SS_IDLE;
            sck <= 1'b0;
            cs_n <= 1'b1;
            mosi <= 1'b0;
            sm_ack <= 16'd0;
            sbyte <= 12'd0;
            sbit <= 3'd0;
            shalf <= 8'd0;
            rxb <= 8'd0;
        end else begin
            case (sst)
            SS_IDLE: if (!bus_mode && spi_req != sm_ack) begin
                if (bus_mode) ;
                else if (spi_len == 12'd0) sm_ack <= spi_req;
                else begin
                    cs_n <= 1'b0;
                    sst <= SS_CS;
                    shalf <= 8'd0;
                    sbyte <= 12'd0;
                    sbit <= 3'd0;
                end
            end
            SS_CS: begin                      // CS low for a few cycles before the first edge
                shalf <= shalf + 8'd1;
                if (shalf == SPI_HALF[7:0]) begin
                    shalf <= 8'd0;
                    sst <= SS_LOW;
                end
            end
            SS_LOW: begin                     // SCK low: MOSI set up at the start
                shalf <= shalf + 8'd1;
                if (shalf == 8'd0) mosi <= txb[3'd7 - sbit];
                if (shalf == SPI_HALF[7:0] - 8'd1) begin
                    shalf <= 8'd0;
                    sck <= 1'b1;              // rising edge: both sides sample
                    rxb <= {rxb[6:0], miso};
                    sst <= SS_HIGH;
                end
            end
            SS_HIGH: begin
                shalf <= shalf + 8'd1;
                if (shalf == SPI_HALF[7:0] - 8'd1) begin
                    shalf <= 8'd0;
                    sck <= 1'b0;
                    sbit <= sbit + 3'd1;
                    sst <= SS_LOW;
                    if (sbit == 3'd7) begin
                        spi_rx[sbyte[11:2]][31 - 8 * sbyte[1:0] -: 8] <= rxb;
                        sbyte <= sbyte + 12'd1;
                        if (sbyte + 12'd1 == spi_len) sst <= SS_END;
                    end
                end
            end
            SS_END: begin                     // hold CS low one half period after the last edge
                shalf <= shalf + 8'd1;
                if (shalf == SPI_HALF[7:0]) begin
                    shalf <= 8'd0;
                    cs_n <= 1'b1;
                    sst <= SS_GAP;
                end
            end
            default: begin                    // CS high long enough for the slave to see it
                shalf <= shalf + 8'd1;
                if (shalf == 8'd7) begin
                    sm_ack <= spi_req;
                    sst <= SS_IDLE;
                end
            end
            endcase
        end
    end

    // ---------------- register-bus engine (bus_mode = 1) ----------------
    // Executes the same transaction bytes on fpga_core's register bus (dbg_reg_*), i.e. what
    // the SPI slave would do after deserialising them: one word per 2 cycles instead of 32
    // SCLK periods. Read data word i goes to spi_rx[i] (Python adds the 5 leading MISO bytes).
    reg [2:0]  rst_st;
    reg [9:0]  rb_i, rb_n;
    reg        rb_read;
    reg [4:0]  rb_t;
    localparam RB_IDLE = 3'd0, RB_HDR = 3'd1, RB_W = 3'd2, RB_R = 3'd3, RB_RW = 3'd4, RB_GAP = 3'd5;
    reg [15:0] rb_ack;
    assign rb_ack_w = rb_ack;
    always @(posedge cclk) begin
        rb_wr <= 1'b0;
        rb_rd <= 1'b0;
        if (rst) begin
            rst_st <= RB_IDLE;
            rb_ack <= 16'd0;
            rb_addr <= 24'd0;
            rb_wdata <= 32'd0;
            rb_i <= 10'd0;
            rb_n <= 10'd0;
            rb_read <= 1'b0;
            rb_t <= 5'd0;
        end else begin
            case (rst_st)
            RB_IDLE: if (bus_mode && spi_req != rb_ack) rst_st <= RB_HDR;
            RB_HDR: begin
                rb_addr <= spi_tx[0][23:0];
                rb_i <= 10'd0;
                if (spi_len >= 12'd8 && spi_tx[0][31:24] == 8'h02) begin
                    rb_n <= spi_len[11:2] - 10'd1;
                    rst_st <= RB_W;
                end else if (spi_len >= 12'd9 && spi_tx[0][31:24] == 8'h03) begin
                    rb_n <= (spi_len[11:0] - 12'd5) >> 2;
                    rst_st <= RB_R;
                end else rst_st <= RB_GAP;
            end
            RB_W: begin
                if (rb_i == rb_n) rst_st <= RB_GAP;
                else if (!rb_wr) begin
                    rb_wr <= 1'b1;
                    rb_wdata <= spi_tx[rb_i + 10'd1];
                end else begin
                    rb_addr <= rb_addr + 24'd1;
                    rb_i <= rb_i + 10'd1;
                end
            end
            RB_R: begin
                if (rb_i == rb_n) rst_st <= RB_GAP;
                else begin
                    rb_rd <= 1'b1;
                    rb_t <= 5'd0;
                    rst_st <= RB_RW;
                end
            end
            RB_RW: begin                          // wait for rvalid (give up after 24 cycles: 0)
                rb_t <= rb_t + 5'd1;
                if ((dbg_rvalid && rb_t != 5'd0) || rb_t == 5'd24) begin
                    rb_rx[rb_i] <= dbg_rvalid ? dbg_rdata : 32'd0;
                    rb_i <= rb_i + 10'd1;
                    rb_addr <= rb_addr + 24'd1;
                    rst_st <= RB_R;
                end
            end
            default: begin
                rb_ack <= spi_req;
                rst_st <= RB_IDLE;
            end
            endcase
        end
    end
endmodule

// Frame slots -> GMII (preamble, SFD, bytes, 12-byte inter-frame gap).
module twin_gmii_inject #(
    parameter NSLOT_LG = 5,
    parameter SLOT_WORDS = 384
) (
    input  wire        clk,
    input  wire        rst,
    input  wire [15:0] head,
    output reg  [15:0] tail,
    output reg  [7:0]  txd,
    output reg         txdv
);
    localparam NSLOT = 1 << NSLOT_LG;
    reg [31:0] mem [0:NSLOT*SLOT_WORDS-1] /*verilator public_flat_rw*/;   // written by Python only
    reg [11:0] len [0:NSLOT-1] /*verilator public_flat_rw*/;  // written by Python only
    reg [1:0]  st;
    reg [11:0] idx, flen;
    reg [3:0]  cnt;
    wire [NSLOT_LG-1:0] slot = tail[NSLOT_LG-1:0];
    wire [31:0] w = mem[slot * SLOT_WORDS + idx[11:2]];
    always @(posedge clk) begin
        if (rst) begin
            tail <= 16'd0;
            st <= 2'd0;
            txd <= 8'd0;
            txdv <= 1'b0;
            idx <= 12'd0;
            cnt <= 4'd0;
            flen <= 12'd0;
        end else begin
            case (st)
            2'd0: begin
                txdv <= 1'b0;
                txd <= 8'd0;
                if (head != tail) begin
                    flen <= len[slot];
                    cnt <= 4'd0;
                    idx <= 12'd0;
                    st <= 2'd1;
                end
            end
            2'd1: begin                          // 7 x 0x55, 0xD5
                txdv <= 1'b1;
                txd <= (cnt == 4'd7) ? 8'hD5 : 8'h55;
                cnt <= cnt + 4'd1;
                if (cnt == 4'd7) st <= (flen == 12'd0) ? 2'd3 : 2'd2;
            end
            2'd2: begin
                txdv <= 1'b1;
                txd <= w[31 - 8 * idx[1:0] -: 8];
                idx <= idx + 12'd1;
                if (idx + 12'd1 == flen) begin
                    st <= 2'd3;
                    cnt <= 4'd0;
                end
            end
            default: begin                       // inter-frame gap
                txdv <= 1'b0;
                txd <= 8'd0;
                cnt <= cnt + 4'd1;
                if (cnt == 4'd11) begin
                    tail <= tail + 16'd1;
                    st <= 2'd0;
                end
            end
            endcase
        end
    end
endmodule

// GMII -> frame slots (bytes after the SFD, FCS included).
module twin_gmii_capture #(
    parameter NSLOT_LG = 5,
    parameter SLOT_WORDS = 384
) (
    input  wire        clk,
    input  wire        rst,
    input  wire [7:0]  rxd,
    input  wire        rxdv,
    input  wire        rxer,
    output reg  [15:0] head,
    input  wire [15:0] tail,
    output reg  [31:0] drop
);
    localparam NSLOT = 1 << NSLOT_LG;
    reg [31:0] mem [0:NSLOT*SLOT_WORDS-1] /*verilator public_flat_rd*/;
    // [11:0] bytes kept, [14] longer than a slot (the rest was not kept), [15] tx_er seen
    reg [15:0] len [0:NSLOT-1] /*verilator public_flat_rd*/;
    reg [1:0]  st;
    reg [11:0] idx;
    reg [31:0] acc;
    reg        err, full, long;
    wire [NSLOT_LG-1:0] slot = head[NSLOT_LG-1:0];
    always @(posedge clk) begin
        if (rst) begin
            head <= 16'd0;
            drop <= 32'd0;
            st <= 2'd0;
            idx <= 12'd0;
            acc <= 32'd0;
            err <= 1'b0;
            full <= 1'b0;
            long <= 1'b0;
        end else begin
            case (st)
            2'd0: if (rxdv) begin                // preamble
                err <= rxer;
                long <= 1'b0;
                full <= (head - tail) >= NSLOT;
                idx <= 12'd0;
                if (rxd == 8'hD5) st <= 2'd1;
            end
            2'd1: begin
                if (rxdv) begin
                    err <= err | rxer;
                    if (idx < SLOT_WORDS * 4) begin
                        acc <= {acc[23:0], rxd};
                        if (idx[1:0] == 2'd3 && !full)
                            mem[slot * SLOT_WORDS + idx[11:2]] <= {acc[23:0], rxd};
                        idx <= idx + 12'd1;
                    end else
                        long <= 1'b1;
                end else begin
                    if (full) drop <= drop + 32'd1;
                    else begin
                        if (idx[1:0] != 2'd0)
                            mem[slot * SLOT_WORDS + idx[11:2]] <= acc << (8 * (4 - idx[1:0]));
                        len[slot] <= {err, long, 2'd0, idx};
                        head <= head + 16'd1;
                    end
                    st <= 2'd0;
                end
            end
            default: st <= 2'd0;
            endcase
        end
    end
endmodule
`default_nettype wire
