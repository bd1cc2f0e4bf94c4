// PHY set-up over MDIO for boards with two 1 GbE PHYs on one management bus: 2^WAIT_LOG2
// cycles after reset (the PHYs' own reset and power-up time) it writes, in the PHY at each
// address of PHYS, register 9 = 0x0200 (1000BASE-T control: advertise 1000 Mb/s full duplex
// only), register 4 = 0x0001 (auto-negotiation advertisement: IEEE 802.3 selector, no 10/100
// ability) and register 0 = 0x1340 (auto-negotiation enabled and restarted, full duplex,
// 1000 Mb/s): the datapath speaks GMII at 1 Gb/s only, so a 10/100 link must not come up.
// It then reads register 2 (PHY identifier 1) of both; phy_missing is set if a PHY did not
// answer (no turnaround 0) or answered all ones or all zeros. done: the sequence has run.
`timescale 1ns / 1ps
`default_nettype none
module wccp_phy_setup #(
    parameter integer WAIT_LOG2 = 21,       // 2^21 cycles at 125 MHz = 17 ms
    parameter integer HALF = 32,            // MDC half period in clock cycles
    parameter [9:0]   PHYS = {5'd1, 5'd0}   // the two PHY addresses {second, first}
) (
    input  wire clk,
    input  wire rst,
    output wire mdc,
    output wire mdio_o,
    output wire mdio_oe,
    input  wire mdio_i,
    output wire done,
    output reg  phy_missing
);
    reg [WAIT_LOG2:0] wait_cnt;
    reg [3:0]  seq;                         // command 0..7, 8 = finished
    reg        issued;
    wire       md_busy, md_done, md_err;
    wire [15:0] md_rdata;
    reg        cmd_rd;
    reg [4:0]  cmd_phy, cmd_reg;
    reg [15:0] cmd_data;
    wire       second = seq == 4'd3 || seq == 4'd4 || seq == 4'd5 || seq == 4'd7;
    always @(*) begin
        cmd_rd = seq[3:1] == 3'd3;          // 6, 7: read the identifiers
        cmd_phy = second ? PHYS[9:5] : PHYS[4:0];
        case (seq)
            4'd0, 4'd3: begin cmd_reg = 5'd9; cmd_data = 16'h0200; end
            4'd1, 4'd4: begin cmd_reg = 5'd4; cmd_data = 16'h0001; end
            4'd2, 4'd5: begin cmd_reg = 5'd0; cmd_data = 16'h1340; end
            default:    begin cmd_reg = 5'd2; cmd_data = 16'h0000; end
        endcase
    end
    wire waited = wait_cnt[WAIT_LOG2];
    always @(posedge clk) begin
        if (rst) begin
            wait_cnt <= 0;
            seq <= 4'd0;
            issued <= 1'b0;
            phy_missing <= 1'b0;
        end else if (!waited) begin
            wait_cnt <= wait_cnt + 1'b1;
        end else if (!seq[3]) begin
            if (!issued && !md_busy) begin
                issued <= 1'b1;
            end else if (md_done) begin
                issued <= 1'b0;
                seq <= seq + 4'd1;
                if (cmd_rd && (md_err || md_rdata == 16'hffff || md_rdata == 16'h0000))
                    phy_missing <= 1'b1;
            end
        end
    end
    assign done = seq[3];
    wccp_mdio #(.HALF(HALF)) mdio (
        .clk(clk), .rst(rst), .start(!rst && waited && !seq[3] && !issued && !md_busy),
        .rd(cmd_rd), .phy(cmd_phy), .regad(cmd_reg), .wdata(cmd_data),
        .busy(md_busy), .done(md_done), .rdata(md_rdata), .rd_err(md_err),
        .mdc(mdc), .mdio_o(mdio_o), .mdio_oe(mdio_oe), .mdio_i(mdio_i));
endmodule
`default_nettype wire
