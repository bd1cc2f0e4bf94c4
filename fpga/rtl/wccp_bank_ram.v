// Double-banked table RAM (maps to ECP5 DP16KD): the datapath reads the live bank, the
// register interface writes the shadow bank. After a commit flips `live`, copy_start
// copies the new live bank into the new shadow bank (3 cycles per word: read, the RAM's
// output register, write) so that later partial updates start from the live contents.
`timescale 1ns / 1ps
`default_nettype none
module wccp_bank_ram #(
    parameter AW = 8,
    parameter DW = 32,
    parameter RD_REG = 1          // 1: a fabric register after the RAM's output register
) (
    input  wire          clk,
    input  wire          rst,
    input  wire          live,
    input  wire          wr_en,
    input  wire [AW-1:0] wr_addr,
    input  wire [DW-1:0] wr_data,
    input  wire [AW-1:0] rd_addr,
    output reg  [DW-1:0] rd_data,
    input  wire          copy_start,
    output reg           copy_busy
);
    reg [AW-1:0] cidx;
    reg  [1:0]   cphase;          // 0 read the live word, 1 (the RAM registers it), 2 write it
    wire [DW-1:0] b_rdata_q;      // port A's read data, 2 cycles after the address

    wire          b_we   = copy_busy ? (cphase == 2'd2) : wr_en;
    wire [AW:0]   b_addr = copy_busy ? {(cphase == 2'd2) ? ~live : live, cidx} : {~live, wr_addr};
    wire [DW-1:0] b_wdata = copy_busy ? b_rdata_q : wr_data;

    // port A: register-interface writes and the copy; port B: the datapath's reads of the
    // live bank (never the word port A writes: that is in the other bank). Read data: the
    // RAM's address register, its output register (2 cycles), then with RD_REG one fabric
    // register (3 cycles; for a reader far from the RAM or with logic behind the read).
    wire [DW-1:0] rd_q2;
    wccp_bram #(.AW(AW + 1), .DW(DW)) ram (
        .clk(clk), .a_we(b_we), .a_addr(b_addr), .a_wdata(b_wdata), .a_rdata(b_rdata_q),
        .b_addr({live, rd_addr}), .b_rdata(rd_q2));
    generate
        if (RD_REG != 0) begin : g_rd_reg
            always @(posedge clk) rd_data <= rd_q2;
        end else begin : g_rd_bram
            always @(*) rd_data = rd_q2;
        end
    endgenerate

    always @(posedge clk) begin
        if (rst) begin
            copy_busy <= 1'b0;
            cidx <= {AW{1'b0}};
            cphase <= 2'd0;
        end else if (copy_start) begin
            copy_busy <= 1'b1;
            cidx <= {AW{1'b0}};
            cphase <= 2'd0;
        end else if (copy_busy) begin
            cphase <= (cphase == 2'd2) ? 2'd0 : cphase + 2'd1;
            if (cphase == 2'd2) begin
                cidx <= cidx + 1'b1;
                if (&cidx) copy_busy <= 1'b0;
            end
        end
    end
endmodule
`default_nettype wire
